// Evaluates ValidatingAdmissionPolicies with cel-js, as kube-apiserver's
// validator does (k8s.io/apiserver pkg/admission/plugin/policy/validating/
// validator.go, pkg/admission/plugin/cel/{activation,condition}.go): match
// conditions with the authorizer, no variables; every validation with the
// authorizer and the variables; every message expression without the
// authorizer, the variables computed again; the decision's message from
// the message expression, else `message`, else "failed expression: ...".
// Costs are not counted here (crates/native counts them); authorizer checks
// are answered from the checks the crate's own evaluation made, and a check
// it did not make is reported, never guessed.
//
// stdin:  {"cases": [{"name", "policy": {"matchConditions": [{"expression"}],
//          "variables": [{"name", "expression"}], "validations": [{"expression",
//          "message", "messageExpression"}]}, "request", "params": [..] | null,
//          "checks": {key: allowed}}]}   (integers as {"$int": "N"})
// stdout: {"cases": [{"name", "evaluations": [{"matched", "decisions":
//          [{"evaluation": "Admit" | "Deny" | "Error", "message"}]}],
//          "unanswered": [key]}]}
import {RE2JS} from 're2js'

import {Authorizer, policyEnvironment} from './env.mjs'

// The checks of the case being evaluated, and those it asked that its
// evaluation in crates/native did not make.
let checks = {}
let unanswered = []

// A check's key, as crates/conformance/tests/cel_js_evaluation.rs writes it.
function key(attributes) {
  if ('path' in attributes) return JSON.stringify(['path', attributes.path, attributes.verb])
  const {group = '', resource = '', subresource = '', namespace = '', name = '', verb} = attributes
  return JSON.stringify([group, resource, subresource, namespace, name, verb])
}

function authorize(attributes) {
  const found = checks[key(attributes)]
  if (found === undefined) {
    unanswered.push(key(attributes))
    throw new Error(`unanswered check ${key(attributes)}`)
  }
  return found
}

// Kubernetes does not ask for homogeneous literals at run time beyond what
// the type check already decided (check.mjs holds that).
const withAuthorizer = policyEnvironment(false, authorize)
const withoutAuthorizer = policyEnvironment(false)
// cel-go's `matches` is RE2 (unanchored, RE2 syntax: `\\pZ`, `\\x{0B}`,
// `(?i)`); cel-js's is JavaScript's RegExp, which reads those otherwise. So
// every `.matches(` is evaluated as `.re2matches(`, RE2's port to
// JavaScript (re2js). No policy writes `.matches(` inside a string literal.
const compiled = new Map()
function re2matches(text, pattern) {
  if (!compiled.has(pattern)) compiled.set(pattern, RE2JS.compile(pattern))
  return compiled.get(pattern).matcher(text).find()
}
for (const env of [withAuthorizer, withoutAuthorizer]) {
  // Each variable's value as computed; its type is check.mjs's business.
  env.registerVariable('variables', 'dyn')
  env.registerFunction('string.re2matches(string): bool', re2matches)
}
const re2 = expression => expression.replaceAll('.matches(', '.re2matches(')

// Parsed once per environment and expression.
const parsed = new Map()
function run(env, expression, context) {
  const cacheKey = (env === withAuthorizer ? 'a' : 'n') + expression
  let program = parsed.get(cacheKey)
  if (!program) {
    program = env.parse(re2(expression))
    parsed.set(cacheKey, program)
  }
  try {
    return {value: program(context)}
  } catch (error) {
    return {error: String(error).split('\n')[0]}
  }
}

// The variables, each computed on first read and kept, as cel-go's lazy
// variables are (so no authorizer check runs that ours did not make); one
// that fails fails every expression that reads it.
function variablesOf(env, policy, context) {
  const variables = {}
  const results = new Map()
  for (const variable of policy.variables) {
    Object.defineProperty(variables, variable.name, {
      enumerable: true,
      get() {
        if (!results.has(variable.name)) {
          results.set(variable.name, run(env, variable.expression, {...context, variables}))
        }
        const result = results.get(variable.name)
        if ('error' in result) throw new Error(result.error)
        return result.value
      },
    })
  }
  return variables
}

function message(validation, result) {
  if (result && typeof result.value === 'string') {
    const text = result.value.trim()
    if (text !== '' && Buffer.byteLength(text) <= 5000 && !text.includes('\n')) return text
  }
  const fixed = (validation.message ?? '').trim()
  return fixed !== '' ? fixed : `failed expression: ${validation.expression.trim()}`
}

function evaluate(policy, request, param) {
  const base = {
    object: request.object ?? null,
    oldObject: request.oldObject ?? null,
    request,
    params: param,
    namespaceObject: null,
  }
  const context = {...base, authorizer: new Authorizer()}
  const failures = []
  let falsy = false
  for (const condition of policy.matchConditions) {
    const result = run(withAuthorizer, condition.expression, context)
    if (result.value === false) falsy = true
    else if (result.value !== true) failures.push(result.error ?? 'not a bool')
  }
  if (falsy) return {matched: false, decisions: []}
  if (failures.length > 0) return {matched: true, decisions: [{evaluation: 'Error', message: failures[0]}]}

  const variables = variablesOf(withAuthorizer, policy, context)
  const results = policy.validations.map(v => run(withAuthorizer, v.expression, {...context, variables}))
  const plain = variablesOf(withoutAuthorizer, policy, base)
  const messages = policy.validations.map(v =>
    v.messageExpression ? run(withoutAuthorizer, v.messageExpression, {...base, variables: plain}) : null,
  )
  const decisions = results.map((result, i) => {
    if ('error' in result) return {evaluation: 'Error', message: result.error}
    if (result.value === true) return {evaluation: 'Admit', message: ''}
    return {evaluation: 'Deny', message: message(policy.validations[i], messages[i])}
  })
  return {matched: true, decisions}
}

const ints = (_, value) =>
  value && typeof value === 'object' && !Array.isArray(value) && Object.keys(value).length === 1 && '$int' in value
    ? BigInt(value.$int)
    : value

let input = ''
for await (const chunk of process.stdin) input += chunk
const out = []
for (const testCase of JSON.parse(input, ints).cases) {
  checks = testCase.checks
  unanswered = []
  const params = testCase.params ?? [null]
  const evaluations = params.map(param => evaluate(testCase.policy, testCase.request, param))
  out.push({name: testCase.name, evaluations, unanswered})
}
process.stdout.write(JSON.stringify({cases: out}) + '\n')
