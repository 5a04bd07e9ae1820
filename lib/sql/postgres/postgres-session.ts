/**
 * What every PostgreSQL session runs before dimsync's SQL: the settings its canonical texts assume (times in UTC,
 * ISO dates) and the functions PostgreSQL lacks that the dialect's SQL calls, created in the session's own schema
 * (`pg_temp`, dropped with the session): nothing is left in the user's schemas, and the views and the as-of
 * function (which outlive the session) never call them.
 */

/** `pg_temp.dimsync_raise(message)`: aborts the statement and its transaction with `message`, intact. */
export const RAISE_FUNCTION = 'pg_temp.dimsync_raise'

/** `pg_temp.dimsync_float_text(x)`: C's printf("%.17g") of a double, the row hash's canonical text of a float. */
export const FLOAT_TEXT_FUNCTION = 'pg_temp.dimsync_float_text'

/**
 * `pg_temp.dimsync_float_piece(x)`: the row hash's piece of a float after its tag, `<length>:<%.17g text>;`, with
 * the text computed once (an expression using it twice would compute it twice, most of a row hash's cost).
 */
export const FLOAT_PIECE_FUNCTION = 'pg_temp.dimsync_float_piece'

/**
 * C's `%.17g` from the double's exact value: its bits give `m * 2^e` exactly (numeric is exact), the decimal digits
 * of that value are rounded to 17 significant digits half to even (what printf does on an exact binary value), and
 * written in `%g`'s form (exponent form when the exponent is below -4 or at least 17, trailing zeros removed). A
 * whole number below 10^17 is its digits. PostgreSQL's own float output is the shortest round-trip text, or at
 * most 15 digits: neither is `%.17g`. `finish` turns the text into what the function returns.
 */
function floatFunctionSql(name: string, finish: (text: string) => string): string {
  return `CREATE OR REPLACE FUNCTION ${name}(x double precision) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $dimsync$
DECLARE
  bits bigint;
  sign text;
  biased integer;
  mantissa numeric;
  power2 integer;
  digits text;
  exponent integer;
  head numeric;
  tail text;
  result text;
BEGIN
  IF x = 'NaN'::double precision THEN result := 'nan';
  ELSIF x = 'Infinity'::double precision THEN result := 'inf';
  ELSIF x = '-Infinity'::double precision THEN result := '-inf';
  ELSIF x = 0 THEN result := CASE WHEN substr(float8send(x), 1, 1) = '\\x80'::bytea THEN '-0' ELSE '0' END;
  ELSIF x = trunc(x) AND abs(x) < 1e17 THEN result := x::bigint::text;
  ELSE
    bits := ('x' || encode(float8send(x), 'hex'))::bit(64)::bigint;
    sign := CASE WHEN bits < 0 THEN '-' ELSE '' END;
    biased := ((bits >> 52) & 2047)::integer;
    mantissa := (bits & 4503599627370495)::numeric;
    IF biased = 0 THEN power2 := -1074; ELSE mantissa := mantissa + 4503599627370496; power2 := biased - 1075; END IF;
    -- value = digits * 10^(exponent - length + 1): m * 2^e, or m * 5^-e * 10^e for e < 0
    IF power2 >= 0 THEN
      digits := trunc(mantissa * (2::numeric ^ power2))::text;
      exponent := length(digits) - 1;
    ELSE
      digits := trunc(mantissa * (5::numeric ^ (-power2)))::text;
      exponent := length(digits) - 1 + power2;
    END IF;
    IF length(digits) > 17 THEN
      head := substr(digits, 1, 17)::numeric;
      tail := substr(digits, 18);
      IF left(tail, 1) > '5' OR (left(tail, 1) = '5' AND (ltrim(substr(tail, 2), '0') <> '' OR mod(head, 2) = 1)) THEN
        head := head + 1;
      END IF;
      digits := head::text;
      IF length(digits) > 17 THEN digits := left(digits, 17); exponent := exponent + 1; END IF;
    ELSE
      digits := rpad(digits, 17, '0');
    END IF;
    IF exponent < -4 OR exponent >= 17 THEN
      result := sign || rtrim(rtrim(left(digits, 1) || '.' || substr(digits, 2), '0'), '.') || 'e' ||
        CASE WHEN exponent < 0 THEN '-' ELSE '+' END || CASE WHEN abs(exponent) < 10 THEN '0' ELSE '' END || abs(exponent)::text;
    ELSIF exponent >= 0 THEN
      result := sign || rtrim(rtrim(left(digits, exponent + 1) || '.' || substr(digits, exponent + 2), '0'), '.');
    ELSE
      result := sign || rtrim('0.' || repeat('0', -exponent - 1) || digits, '0');
    END IF;
  END IF;
  RETURN ${finish('result')};
END
$dimsync$`
}

const FLOAT_TEXT_SQL = floatFunctionSql(FLOAT_TEXT_FUNCTION, (text) => text)
const FLOAT_PIECE_SQL = floatFunctionSql(
  FLOAT_PIECE_FUNCTION,
  (text) => `length(${text}) || ':' || ${text} || ';'`,
)

const RAISE_SQL = `CREATE OR REPLACE FUNCTION ${RAISE_FUNCTION}(message text) RETURNS text
LANGUAGE plpgsql VOLATILE AS $dimsync$
BEGIN
  RAISE EXCEPTION USING MESSAGE = message, ERRCODE = 'P0001';
END
$dimsync$`

/**
 * `pg_temp.dimsync_try_cast(text, NULL::type)`: the text cast to the type of the second argument, NULL where it
 * does not convert (DuckDB's TRY_CAST; pg_input_is_valid is PostgreSQL 16+). One dynamic statement a value: for
 * `dimsync evolve`'s check, not for merges.
 */
export const TRY_CAST_FUNCTION = 'pg_temp.dimsync_try_cast'

const TRY_CAST_SQL = `CREATE OR REPLACE FUNCTION ${TRY_CAST_FUNCTION}(value text, target anyelement) RETURNS anyelement
LANGUAGE plpgsql STABLE AS $dimsync$
DECLARE
  result target%TYPE;
BEGIN
  EXECUTE format('SELECT CAST(%L AS %s)', value, pg_typeof(target)) INTO result;
  RETURN result;
EXCEPTION WHEN others THEN
  RETURN NULL;
END
$dimsync$`

/**
 * `pg_temp.dimsync_last_non_null(x)`: an aggregate whose value is the last non-NULL `x` it was given; as a window
 * function over the rows up to the current one, what `LAST_VALUE(x IGNORE NULLS)` is elsewhere (PostgreSQL has no
 * IGNORE NULLS). Any type, arrays included.
 */
export const LAST_NON_NULL_AGGREGATE = 'pg_temp.dimsync_last_non_null'

const LAST_NON_NULL_SQL = [
  `CREATE OR REPLACE FUNCTION pg_temp.dimsync_keep_non_null(state anyelement, value anyelement) RETURNS anyelement
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $dimsync$ SELECT COALESCE(value, state) $dimsync$`,
  `CREATE OR REPLACE AGGREGATE ${LAST_NON_NULL_AGGREGATE}(anyelement) (SFUNC = pg_temp.dimsync_keep_non_null, STYPE = anyelement)`,
]

/** Statements to run first on every connection (idempotent). */
export const POSTGRES_SESSION_SETUP: readonly string[] = Object.freeze([
  // Literals are rendered with `''` as the only escape (stringLiteral): a backslash must stay a backslash.
  'SET standard_conforming_strings = on',
  "SET TimeZone = 'UTC'",
  "SET DateStyle = 'ISO, YMD'",
  'SET IntervalStyle = postgres',
  FLOAT_TEXT_SQL,
  FLOAT_PIECE_SQL,
  RAISE_SQL,
  TRY_CAST_SQL,
  ...LAST_NON_NULL_SQL,
])
