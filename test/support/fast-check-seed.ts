import fc from 'fast-check'
import { propertySeed } from './property-seed.ts'

/**
 * Every property test runs with one fixed seed unless DIMSYNC_PROPERTY_SEED gives another, so a CI run is
 * repeatable and a failure seen once is seen again (fast-check prints the seed and path of a counterexample).
 * Set DIMSYNC_PROPERTY_SEED to explore other inputs locally; a test that pins its own seed takes it through
 * propertySeed, which the variable moves too.
 */
fc.configureGlobal({ ...fc.readConfigureGlobal(), seed: propertySeed(20261130) })
