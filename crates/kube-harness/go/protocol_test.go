package main

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// serveJSON serves one line and returns the reply as the client reads it.
func serveJSON(t *testing.T, s *server, line string) map[string]any {
	t.Helper()
	out, err := json.Marshal(s.serve([]byte(line)))
	if err != nil {
		t.Fatalf("%s: the reply does not encode: %v", line, err)
	}
	var reply map[string]any
	if err := json.Unmarshal(out, &reply); err != nil {
		t.Fatalf("%s: the reply %s is not an object: %v", line, out, err)
	}
	if _, ok := reply["answer"]; !ok {
		t.Fatalf("%s: the reply %s has no answer field", line, out)
	}
	if _, ok := reply["error"]; !ok {
		t.Fatalf("%s: the reply %s has no error field", line, out)
	}
	return reply
}

func TestHelloNamesTheProtocolVersion(t *testing.T) {
	reply := serveJSON(t, newServer(), `{"op": "hello", "args": {}}`)
	answer, _ := reply["answer"].(map[string]any)
	if answer["protocol"] != float64(protocolVersion) || reply["error"] != nil {
		t.Fatalf("hello answered %v", reply)
	}
}

func TestARequestIsReadExactly(t *testing.T) {
	for _, tc := range []struct {
		name, line, want string
	}{
		{"an unknown field", `{"op": "hello", "args": {}, "opp": 1}`, "request: unknown field opp"},
		{"no arguments", `{"op": "hello"}`, "request: missing field args"},
		{"an unknown argument", `{"op": "crdUpdate", "args": {"old": {}, "new": {}, "versions": [], "neww": {}}}`, "args: unknown field neww"},
		{"a missing argument", `{"op": "compile", "args": {"policy": {}, "versions": []}}`, "args: missing field crds"},
		{"a field of a list's item", `{"op": "admit", "args": {"request": {}, "crds": [], "validatingPolicies": [], "validatingBindings": [], "mutatingPolicies": [], "mutatingBindings": [], "objects": [], "authorizer": [{"user": "u"}]}}`, "args.authorizer[0]: missing field"},
		{"a wrong type", `{"op": "compile", "args": {"policy": {}, "versions": "1.36", "crds": []}}`, "cannot unmarshal string"},
		{"an unknown op", `{"op": "compyle", "args": {}}`, `unknown op "compyle": the ops are admit, compile, crdUpdate, hello`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reply := serveJSON(t, newServer(), tc.line)
			why, _ := reply["error"].(string)
			if reply["answer"] != nil || !strings.Contains(why, tc.want) {
				t.Fatalf("want an error containing %q, got %v", tc.want, reply)
			}
		})
	}
}

// A pure op that panics is reported as that request's error, every time it
// is asked: the panic is not kept as an answer (it once was, as null,
// because the reply was kept by a deferred function that ran before the
// recovery).
func TestAPanicIsAnErrorEveryTimeAndNeverKept(t *testing.T) {
	s := newServer()
	calls := 0
	s.ops["boom"] = op{pure: true, serve: func(*server, json.RawMessage) (any, error) {
		calls++
		panic("the Kubernetes package fell over")
	}}
	for i := 0; i < 2; i++ {
		reply := serveJSON(t, s, `{"op": "boom", "args": {}}`)
		why, _ := reply["error"].(string)
		if reply["answer"] != nil || !strings.Contains(why, "boom: panic: the Kubernetes package fell over") {
			t.Fatalf("ask %d: want the panic as the error, got %v", i+1, reply)
		}
	}
	if calls != 2 || len(s.answers) != 0 {
		t.Fatalf("the op ran %d times and %d replies were kept; want 2 and 0", calls, len(s.answers))
	}
}

func TestAPureAnswerIsKeptAndAnErrorIsNot(t *testing.T) {
	s := newServer()
	calls := 0
	fail := true
	s.ops["count"] = op{pure: true, serve: func(*server, json.RawMessage) (any, error) {
		calls++
		if fail {
			return nil, errors.New("not yet")
		}
		return calls, nil
	}}
	line := `{"op": "count", "args": {}}`
	if reply := serveJSON(t, s, line); reply["error"] == nil {
		t.Fatalf("want the error, got %v", reply)
	}
	fail = false
	first := serveJSON(t, s, line)
	second := serveJSON(t, s, line)
	if first["answer"] != float64(2) || second["answer"] != float64(2) || calls != 2 {
		t.Fatalf("want the second call's answer twice from two calls, got %v, %v after %d calls", first, second, calls)
	}
}
