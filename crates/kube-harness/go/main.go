// Command kube-harness runs Kubernetes' own admission code (k8s.io/apiserver
// and k8s.io/apiextensions-apiserver, release v0.36, the code of Kubernetes
// 1.36) on what olm-guard generates, so that the repository's tests ask the
// real code instead of an emulation of it:
//
//   - compile: a ValidatingAdmissionPolicy or MutatingAdmissionPolicy compiled
//     as the API server compiles one it is asked to store, for each
//     compatibility version given, and type-checked as its controller fills
//     status.typeChecking;
//   - crdUpdate: a CustomResourceDefinition update validated as the API
//     server validates it (structural schema, rule compilation, estimated
//     cost limits), and every x-kubernetes-validations rule of the new CRD
//     compiled for each compatibility version given;
//   - admit: one AdmissionRequest through the admission path of a write: the
//     objects decoded as a custom resource's handler decodes them (pruned,
//     defaulted, metadata coerced) or as a built-in type, the
//     MutatingAdmissionPolicies given (reinvoked once, as the API server
//     reinvokes them), the custom resource's schema validation with its CEL
//     rules (oldSelf on UPDATE), then the ValidatingAdmissionPolicies given
//     through the validating policy dispatcher, the authorizer answered from
//     a table of answers given with the request.
//
// The protocol is JSON Lines: one request per line on stdin
// ({"op": ..., "args": {...}}), one reply per line on stdout, in order
// ({"answer": ..., "error": null} or {"answer": null, "error": "..."}); its
// messages are in protocol.go, each read exactly, and the hello op names
// their version. A request that cannot be served gets its error; the
// process keeps serving. Nothing here decides an admission itself: every
// decision, message and patch comes from the Kubernetes packages called.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/klog/v2"
)

func main() {
	// klog writes to stderr; the API server's internal-error logging
	// (utilruntime.HandleError) must not interleave with the answers.
	klog.SetOutput(io.Discard)
	klog.LogToStderr(false)

	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	encoder := json.NewEncoder(out)
	encoder.SetEscapeHTML(false)
	server := newServer()
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 {
			if err := encoder.Encode(server.serve(line)); err != nil {
				fmt.Fprintf(os.Stderr, "kube-harness: cannot write a reply: %v\n", err)
				os.Exit(1)
			}
			if err := out.Flush(); err != nil {
				os.Exit(1)
			}
		}
		if err == io.EOF {
			return
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "kube-harness: cannot read stdin: %v\n", err)
			os.Exit(1)
		}
	}
}

// op is one operation of the protocol.
type op struct {
	// pure says the answer depends on the request alone, so that it is
	// kept and given again for the same request.
	pure bool
	// serve reads the arguments exactly and answers.
	serve func(s *server, args json.RawMessage) (any, error)
}

// handler turns an op's typed function into an op's serve: its arguments
// read exactly into Req (decodeExact), its answer a *Ans.
func handler[Req, Ans any](f func(*server, *Req) (*Ans, error)) func(*server, json.RawMessage) (any, error) {
	return func(s *server, args json.RawMessage) (any, error) {
		var req Req
		if err := decodeExact(args, &req, "args"); err != nil {
			return nil, err
		}
		return f(s, &req)
	}
}

// ops are the operations of the protocol, by name.
func ops() map[string]op {
	return map[string]op{
		"hello":     {pure: true, serve: handler((*server).hello)},
		"compile":   {pure: true, serve: handler((*server).compile)},
		"crdUpdate": {pure: true, serve: handler((*server).crdUpdate)},
		"admit":     {serve: handler((*server).admit)},
	}
}

// server keeps what is expensive to build across requests: compiled
// policies and CRD schemas, each keyed by its JSON.
type server struct {
	ops        map[string]op
	crds       map[string]*crdSchemas
	validators map[string]validating.Validator
	mutators   map[string]mutating.PolicyEvaluator
	resolvers  map[string]*resolved
	// answers keeps the replies of the pure ops, by the request's JSON.
	// Only answers are kept: an error, a panic among them, is reported
	// again each time the request comes.
	answers map[string]reply
}

// resolved is a type checker's schema resolver and REST mapper for a set
// of CRDs.
type resolved struct {
	resolver *crdResolver
	mapper   *meta.DefaultRESTMapper
}

func newServer() *server {
	return &server{
		ops:        ops(),
		crds:       map[string]*crdSchemas{},
		validators: map[string]validating.Validator{},
		mutators:   map[string]mutating.PolicyEvaluator{},
		resolvers:  map[string]*resolved{},
		answers:    map[string]reply{},
	}
}

// hello names the protocol version, which the client checks first.
func (s *server) hello(*helloRequest) (*helloAnswer, error) {
	return &helloAnswer{Protocol: protocolVersion}, nil
}

// serve answers one line.
func (s *server) serve(line []byte) reply {
	var request envelope
	if err := decodeExact(line, &request, "request"); err != nil {
		return failed(fmt.Sprintf("not a request of protocol %d: %v", protocolVersion, err))
	}
	o, ok := s.ops[request.Op]
	if !ok {
		names := make([]string, 0, len(s.ops))
		for name := range s.ops {
			names = append(names, name)
		}
		sort.Strings(names)
		return failed(fmt.Sprintf("unknown op %q: the ops are %s", request.Op, strings.Join(names, ", ")))
	}
	key := jsonKey(line)
	if o.pure {
		if cached, ok := s.answers[key]; ok {
			return cached
		}
	}
	answer, err := call(s, o, request.Args)
	if err != nil {
		return failed(fmt.Sprintf("%s: %v", request.Op, err))
	}
	r := reply{Answer: answer}
	if o.pure {
		s.answers[key] = r
	}
	return r
}

// call runs an op. A panic in a Kubernetes package on some input is that
// request's error, so that one bad case does not hide the answers to the
// others.
func call(s *server, o op, args json.RawMessage) (answer any, err error) {
	defer func() {
		if r := recover(); r != nil {
			answer, err = nil, fmt.Errorf("panic: %v", r)
		}
	}()
	return o.serve(s, args)
}

// failed is the reply to a request that could not be served.
func failed(why string) reply {
	return reply{Error: &why}
}
