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
//          "expressions": [{"where", "expression"}]}],
//          "crdRules": [{"name", "schema", "expressions": [{"where", "expression"}]}]}
// (match conditions are compiled without `variables`, the rest with them;
// a CRD's x-kubernetes-validations rule and its messageExpression with
// `self` and `oldSelf` typed by the structural schema of the field they are
// on, as apiextensions-apiserver compiles them)
// stdout: {"checked": N, "refused": [{"policy", "where", "error"}]}
import {newEnvironment, policyEnvironment} from './env.mjs'

function error(result) {
  return String(result.error ?? 'refused').split('\n')[0]
}

// Kubernetes' base environment asks for homogeneous list and map literals
// (k8s.io/apiserver pkg/cel/environment/base.go:
// cel.HomogeneousAggregateLiterals), where cel-go still joins `dyn` with any
// element type (checker.go joinTypes: dyn is assignable to every type), as
// in `[dyn(1), 'a']`. cel-js refuses that mix too; so a refusal that names
// `dyn` as one of the two element types is checked again without the
// homogeneous rule, for everything else.
const DYN_MIX = /(List elements must have the same type|Map (key|value) uses wrong type), expected type '([^']*)' but found '([^']*)'/

function checked_in(makeEnv, expression) {
  const result = makeEnv(true).check(expression)
  const mix = !result.valid && DYN_MIX.exec(error(result))
  if (mix && (mix[3] === 'dyn' || mix[4] === 'dyn')) return makeEnv(false).check(expression)
  return result
}

// The CEL type of a structural schema (k8s.io/apiserver pkg/cel/common
// SchemaDeclType): a nested schema for an object with properties, a type
// name otherwise. Where the declaration is wider than a cel-js type string
// can say (objects inside lists and maps, dates, int-or-string, preserved
// unknown fields), `dyn`: those are checked less, never refused wrongly.
function celType(schema) {
  if (!schema || schema['x-kubernetes-preserve-unknown-fields'] || schema['x-kubernetes-int-or-string']) {
    return 'dyn'
  }
  const inner = node => {
    const type = celType(node)
    return typeof type === 'string' ? type : 'dyn'
  }
  switch (schema.type) {
    case 'string':
      return schema.format ? 'dyn' : 'string'
    case 'integer':
      return 'int'
    case 'number':
      return 'double'
    case 'boolean':
      return 'bool'
    case 'array':
      return `list<${inner(schema.items)}>`
    case 'object':
      if (schema.properties) {
        return Object.fromEntries(Object.entries(schema.properties).map(([name, node]) => [name, celType(node)]))
      }
      if (schema.additionalProperties) return `map<string, ${inner(schema.additionalProperties)}>`
      return 'dyn'
    default:
      return 'dyn'
  }
}

// A CRD rule's environment: `self` and `oldSelf` of the field's type.
function crdEnvironment(schema, homogeneous) {
  const env = newEnvironment(homogeneous)
  const type = celType(schema)
  for (const name of ['self', 'oldSelf']) {
    if (typeof type === 'string') env.registerVariable(name, type)
    else env.registerVariable({name, schema: type})
  }
  return env
}

let input = ''
for await (const chunk of process.stdin) input += chunk
const {policies, crdRules = []} = JSON.parse(input)
let checked = 0
const refused = []
let types = 0
// An environment whose `variables` has `fields`: cel-js declares a type
// once, so each check gets an environment of its own.
function withVariables(fields) {
  return homogeneous => {
    const env = policyEnvironment(homogeneous)
    const name = `Variables${types++}`
    env.registerType(name, {fields: {...fields}})
    env.registerVariable('variables', name)
    return env
  }
}

for (const policy of policies) {
  const check = (makeEnv, where, expression) => {
    checked++
    const result = checked_in(makeEnv, expression)
    if (!result.valid) refused.push({policy: policy.name, where, error: error(result)})
    return result
  }
  for (const {where, expression} of policy.matchConditions) check(policyEnvironment, where, expression)
  // A variable sees the variables before it, with the types they checked to.
  const fields = {}
  for (const variable of policy.variables) {
    const result = check(withVariables(fields), `variables.${variable.name}`, variable.expression)
    fields[variable.name] = result.valid ? result.type : 'dyn'
  }
  for (const {where, expression} of policy.expressions) check(withVariables(fields), where, expression)
}
for (const rule of crdRules) {
  for (const {where, expression} of rule.expressions) {
    checked++
    const result = checked_in(homogeneous => crdEnvironment(rule.schema, homogeneous), expression)
    if (!result.valid) refused.push({policy: rule.name, where, error: error(result)})
  }
}
process.stdout.write(JSON.stringify({checked, refused}) + '\n')
