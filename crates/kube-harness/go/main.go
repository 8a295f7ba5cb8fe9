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
// The protocol is JSON Lines: one request object per line on stdin
// ({"op": ..., ...}), one answer per line on stdout, in order. A request
// that cannot be read gets {"error": "..."}; the process keeps serving.
// Nothing here decides an admission itself: every decision, message and
// patch comes from the Kubernetes packages called.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/klog/v2"
)

// request is one line of input: op names the operation, whose own
// fields are read from the same object.
type request struct {
	Op string `json:"op"`
}

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
			answer := server.serve(line)
			if err := encoder.Encode(answer); err != nil {
				fmt.Fprintf(os.Stderr, "kube-harness: cannot write an answer: %v\n", err)
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

// failure is the answer to a request that could not be served.
type failure struct {
	Error string `json:"error"`
}

// server keeps what is expensive to build across requests: compiled
// policies and CRD schemas, each keyed by its JSON.
type server struct {
	crds      map[string]*crdSchemas
	policies  map[string]any
	resolvers map[string]*resolved
	// answers keeps the answers of the ops that depend on their request
	// alone (compile, crdUpdate), by the request's JSON.
	answers map[string]any
}

// resolved is a type checker's schema resolver and REST mapper for a set
// of CRDs.
type resolved struct {
	resolver *crdResolver
	mapper   *meta.DefaultRESTMapper
}

func newServer() *server {
	return &server{crds: map[string]*crdSchemas{}, policies: map[string]any{}, resolvers: map[string]*resolved{}, answers: map[string]any{}}
}

func (s *server) serve(line []byte) (answer any) {
	// A panic in a Kubernetes package on some input is reported as that
	// request's error, naming the op, so that one bad case does not hide
	// the answers to the others.
	defer func() {
		if r := recover(); r != nil {
			answer = failure{Error: fmt.Sprintf("panic: %v", r)}
		}
	}()
	var req request
	if err := json.Unmarshal(line, &req); err != nil {
		return failure{Error: fmt.Sprintf("the request is not JSON of the protocol: %v", err)}
	}
	pure := req.Op == "compile" || req.Op == "crdUpdate"
	if cached, ok := s.answers[jsonKey(line)]; ok && pure {
		return cached
	}
	var err error
	defer func() {
		if err == nil && pure {
			s.answers[jsonKey(line)] = answer
		}
	}()
	switch req.Op {
	case "compile":
		var args compileRequest
		if err = json.Unmarshal(line, &args); err == nil {
			answer, err = s.compile(&args)
		}
	case "crdUpdate":
		var args crdUpdateRequest
		if err = json.Unmarshal(line, &args); err == nil {
			answer, err = s.crdUpdate(&args)
		}
	case "admit":
		var args admitRequest
		if err = json.Unmarshal(line, &args); err == nil {
			answer, err = s.admit(&args)
		}
	default:
		err = fmt.Errorf("unknown op %q: the ops are compile, crdUpdate, admit", req.Op)
	}
	if err != nil {
		return failure{Error: fmt.Sprintf("%s: %v", req.Op, err)}
	}
	return answer
}
