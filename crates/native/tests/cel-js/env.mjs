// The environments kube-apiserver compiles CEL in, declared for cel-js
// (https://github.com/marcbachmann/cel-js): a ValidatingAdmissionPolicy's
// (k8s.io/apiserver pkg/admission/plugin/cel/compile.go) and a CRD rule's
// base. check.mjs type-checks in them, evaluate.mjs evaluates.
import {Environment} from '@marcbachmann/cel-js'

// Kubernetes' authorizer library (pkg/cel/library/authz.go): each step of
// a check's chain carries the attributes so far.
export class Authorizer {}
class Attributed {
  constructor(attributes) {
    this.attributes = attributes
  }
}
class PathCheck extends Attributed {}
class GroupCheck extends Attributed {}
class ResourceCheck extends Attributed {}
class Decision {
  constructor(allowed) {
    this.allowed = allowed
  }
}
class FormatLibrary {}
class Format {}

// Kubernetes' `format` library (k8s.io/apiserver pkg/cel/library/format.go),
// which upstream CRDs use (`!format.dns1123Label().validate(self).hasValue()`).
const FORMATS = [
  'dns1123Label', 'dns1123Subdomain', 'dns1035Label', 'qualifiedName', 'dns1123LabelPrefix',
  'dns1123SubdomainPrefix', 'dns1035LabelPrefix', 'labelValue', 'uri', 'uuid', 'byte', 'date',
  'datetime',
]

// Kubernetes' base environment (pkg/cel/environment/base.go) has optional
// types; the format library is part of it.
export function newEnvironment(homogeneous) {
  const env = new Environment({homogeneousAggregateLiterals: homogeneous, enableOptionalTypes: true})
  env.registerType('FormatLibrary', FormatLibrary)
  env.registerType('Format', Format)
  const none = () => null
  for (const name of FORMATS) env.registerFunction(`FormatLibrary.${name}(): Format`, none)
  env.registerFunction('FormatLibrary.named(string): optional<Format>', none)
  env.registerFunction('Format.validate(string): optional<list<string>>', none)
  env.registerVariable('format', 'FormatLibrary')
  return env
}

// A policy's environment. `authorize(attributes)` answers a check
// (`{group, resource, subresource, namespace, name, verb}` or `{path,
// verb}`); without it, the declarations alone, for type checks.
export function policyEnvironment(homogeneous, authorize = null) {
  const env = newEnvironment(homogeneous)
  for (const [name, ctor] of Object.entries({Authorizer, PathCheck, GroupCheck, ResourceCheck, Decision})) {
    env.registerType(name, ctor)
  }
  const ask = attributes => {
    if (!authorize) throw new Error('no authorizer here')
    return new Decision(authorize(attributes))
  }
  const step = field => (check, value) => new ResourceCheck({...check.attributes, [field]: value})
  const functions = {
    'Authorizer.path(string): PathCheck': (_, path) => new PathCheck({path}),
    'Authorizer.group(string): GroupCheck': (_, group) => new GroupCheck({group}),
    'Authorizer.serviceAccount(string, string): Authorizer': () => {
      throw new Error('serviceAccount() is not answered here')
    },
    'GroupCheck.resource(string): ResourceCheck': (check, resource) =>
      new ResourceCheck({...check.attributes, resource}),
    'ResourceCheck.subresource(string): ResourceCheck': step('subresource'),
    'ResourceCheck.namespace(string): ResourceCheck': step('namespace'),
    'ResourceCheck.name(string): ResourceCheck': step('name'),
    'ResourceCheck.check(string): Decision': (check, verb) => ask({...check.attributes, verb}),
    'PathCheck.check(string): Decision': (check, verb) => ask({...check.attributes, verb}),
    'Decision.allowed(): bool': decision => decision.allowed,
    'Decision.reason(): string': () => '',
    'Decision.errored(): bool': () => false,
    'Decision.error(): string': () => '',
  }
  for (const [signature, handler] of Object.entries(functions)) env.registerFunction(signature, handler)
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

