// Ferry's local runtime asks this process whether Step Functions would accept a definition.
//
// One state machine definition (JSON text) on stdin; on stdout one JSON object:
//   {"errors": [{"code": "SCHEMA_VALIDATION_FAILED", "path": "/States/A/Parameters",
//                "message": "..."}, ...]}
// with no error when the definition is valid. The checks are asl-validator's (the Amazon
// States Language's schema, JSONPath and intrinsic functions, transitions, terminal states,
// duplicate fields); nothing here decides anything itself.
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const validator = require('asl-validator')

let text = ''
process.stdin.setEncoding('utf8')
for await (const chunk of process.stdin) text += chunk

let errors
try {
  const { errors: found } = validator(JSON.parse(text))
  errors = found.map((error) => ({
    code: error['Error code'],
    path: (error.schemaError && error.schemaError.instancePath) || null,
    message: error.Message
  }))
} catch (error) {
  errors = [{ code: 'INVALID_JSON', path: null, message: String(error && error.message || error) }]
}
process.stdout.write(JSON.stringify({ errors }) + '\n')
