import { DuckDBScalarFunction, VARCHAR, type DuckDBConnection } from '@duckdb/node-api'
import { canonicalJson } from '../../core/canonical-json.ts'

/**
 * Registers `name(VARCHAR) → VARCHAR` on a connection: the canonical text of a JSON document (canonicalJson:
 * BigQuery's text of it), for the sources' staging of JSON columns. NULL stays NULL; text that is not JSON comes
 * back unchanged, for the cast to JSON after it to report.
 */
export function registerCanonicalJson(connection: DuckDBConnection, name: string): void {
  connection.registerScalarFunction(
    DuckDBScalarFunction.create({
      name,
      mainFunction: (_info, input, output) => {
        const texts = input.getColumnVector(0)
        for (let row = 0; row < input.rowCount; row++) {
          const text = texts.getItem(row)
          output.setItem(row, typeof text === 'string' ? canonicalJson(text) : null)
        }
        output.flush()
      },
      returnType: VARCHAR,
      parameterTypes: [VARCHAR],
    }),
  )
}
