#!/usr/bin/env node
// The CLI is TypeScript run through tsx, so the installed package and `npm run dimsync` execute the same source.
import { register } from 'tsx/esm/api'

register()
await import('../functions/local/cli.ts')
