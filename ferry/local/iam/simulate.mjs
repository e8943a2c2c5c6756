// Ferry's local runtime asks this process whether AWS would allow a request.
//
// One JSON object per line on stdin:
//   {"id": 1, "principal": "arn:aws:sts::123456789012:assumed-role/R/s", "action": "s3:GetObject",
//    "resource": "arn:aws:s3:::bucket/key", "resourceAccount": "123456789012",
//    "context": {"aws:SecureTransport": "true"}, "identityPolicies": [{...}, ...],
//    "resourcePolicy": {...} | null}
// and one answer per line on stdout, in any order:
//   {"id": 1, "decision": "Allowed" | "ImplicitlyDenied" | "ExplicitlyDenied" | "Invalid",
//    "detail": "..."}
//
// The evaluation is @cloud-copilot/iam-simulate's (identity and resource policies, every
// condition operator, same- and cross-account rules); nothing here decides anything itself.
import { createInterface } from 'node:readline'
import { runSimulation } from '@cloud-copilot/iam-simulate'

function simulation(request) {
  const identityPolicies = (request.identityPolicies || []).map((policy, index) => ({
    name: `policy${index}`,
    policy
  }))
  return {
    identityPolicies,
    serviceControlPolicies: [],
    resourceControlPolicies: [],
    ...(request.resourcePolicy ? { resourcePolicy: request.resourcePolicy } : {}),
    request: {
      action: request.action,
      principal: request.principal,
      resource: { resource: request.resource, accountId: request.resourceAccount },
      contextVariables: request.context || {}
    }
  }
}

async function answer(line) {
  let request
  try {
    request = JSON.parse(line)
  } catch (error) {
    return { id: null, decision: 'Invalid', detail: `not JSON: ${error.message}` }
  }
  try {
    const response = await runSimulation(simulation(request), {})
    if (response.resultType === 'error') {
      return { id: request.id, decision: 'Invalid', detail: JSON.stringify(response.errors) }
    }
    return { id: request.id, decision: response.overallResult }
  } catch (error) {
    return { id: request.id, decision: 'Invalid', detail: String(error && error.stack || error) }
  }
}

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity })
for await (const line of lines) {
  if (!line.trim()) continue
  answer(line).then((result) => process.stdout.write(JSON.stringify(result) + '\n'))
}
