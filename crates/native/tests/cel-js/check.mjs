// Type-checks ValidatingAdmissionPolicy expressions with cel-js, a CEL
// implementation of its own (https://github.com/marcbachmann/cel-js), in an
// environment declared as kube-apiserver declares it for a policy
// (k8s.io/apiserver pkg/admission/plugin/cel/compile.go: `object`,
// `oldObject`, `params` and `namespaceObject` dynamic; `request` the
// AdmissionRequest type of `buildRequestType`; `authorizer` the library of
// pkg/cel/library/authz.go; `variables` an object whose fields have the types
// their own expressions check to, in order, as `CompileAndStoreVariables`
// declares them). The API server refuses a policy whose expression does not
// compile in that environment, so an expression cel-js refuses is a policy a
// cluster would not take.
//
// stdin:  {"policies": [{"name", "matchConditions": [{"where", "expression"}],
//          "variables": [{"name", "expression"}],
//          "expressions": [{"where", "expression"}]}]}
// (match conditions are compiled without `variables`, the rest with them)
// stdout: {"checked": N, "refused": [{"policy", "where", "error"}]}
import {Environment} from '@marcbachmann/cel-js'

class Authorizer {}
class PathCheck {}
class GroupCheck {}
class ResourceCheck {}
class Decision {}

function environment() {
  // Kubernetes does not ask for homogeneous list and map literals.
  const env = new Environment({homogeneousAggregateLiterals: false})
  for (const [name, ctor] of Object.entries({Authorizer, PathCheck, GroupCheck, ResourceCheck, Decision})) {
    env.registerType(name, ctor)
  }
  const none = () => null
  for (const signature of [
    'Authorizer.path(string): PathCheck',
    'Authorizer.group(string): GroupCheck',
    'Authorizer.serviceAccount(string, string): Authorizer',
    'GroupCheck.resource(string): ResourceCheck',
    'ResourceCheck.subresource(string): ResourceCheck',
    'ResourceCheck.namespace(string): ResourceCheck',
    'ResourceCheck.name(string): ResourceCheck',
    'ResourceCheck.check(string): Decision',
    'PathCheck.check(string): Decision',
    'Decision.allowed(): bool',
    'Decision.reason(): string',
    'Decision.errored(): bool',
    'Decision.error(): string',
  ]) {
    env.registerFunction(signature, none)
  }
  for (const name of ['object', 'oldObject', 'params', 'namespaceObject']) env.registerVariable(name, 'dyn')
  env.registerVariable('authorizer', 'Authorizer')
  const gvk = {group: 'string', version: 'string', kind: 'string'}
  const gvr = {group: 'string', version: 'string', resource: 'string'}
  env.registerVariable({
    name: 'request',
    schema: {
      kind: gvk,
      resource: gvr,
      subResource: 'string',
      requestKind: gvk,
      requestResource: gvr,
      requestSubResource: 'string',
      name: 'string',
      namespace: 'string',
      operation: 'string',
      userInfo: {username: 'string', uid: 'string', groups: 'list<string>', extra: 'map<string, list<string>>'},
      dryRun: 'bool',
      options: 'dyn',
    },
  })
  return env
}

function error(result) {
  return String(result.error ?? 'refused').split('\n')[0]
}

let input = ''
for await (const chunk of process.stdin) input += chunk
const {policies} = JSON.parse(input)
let checked = 0
const refused = []
for (const [index, policy] of policies.entries()) {
  // Each policy its own environment: its variables are its own type.
  const env = environment()
  for (const {where, expression} of policy.matchConditions) {
    checked++
    const result = env.check(expression)
    if (!result.valid) refused.push({policy: policy.name, where, error: error(result)})
  }
  const fields = {}
  for (const variable of policy.variables) {
    checked++
    const result = env.check(variable.expression)
    if (result.valid) {
      fields[variable.name] = result.type
    } else {
      fields[variable.name] = 'dyn'
      refused.push({policy: policy.name, where: `variables.${variable.name}`, error: error(result)})
    }
  }
  const variablesType = `Variables${index}`
  env.registerType(variablesType, {fields})
  env.registerVariable('variables', variablesType)
  for (const {where, expression} of policy.expressions) {
    checked++
    const result = env.check(expression)
    if (!result.valid) refused.push({policy: policy.name, where, error: error(result)})
  }
}
process.stdout.write(JSON.stringify({checked, refused}) + '\n')
