// Command crd-apiserver runs Kubernetes' standalone API server for custom
// resources, k8s.io/apiextensions-apiserver v0.36 (the code of Kubernetes
// 1.36), as Kubernetes' own integration tests run it: the flags of
// test/integration/fixtures/server.go (StartDefaultServer), started by
// pkg/cmd/server/testing.StartTestServer, which serves on a listener the
// system gives it on 127.0.0.1:0.
//
// olm-guard's tests start it on a real etcd (crates/kube-harness/src/cluster/)
// and talk to it over HTTPS, as a user talks to a cluster. The arguments
// are the API server's own flags, appended to the fixture's: the tests give
// --etcd-servers, --etcd-prefix, --client-ca-file (X.509 clients; a
// certificate in the system:masters group is always authorized) and
// --tls-cert-file/--tls-private-key-file.
//
// Once /readyz answers (without the informer-sync check: the server's core/v1
// Services informer never syncs without kube-apiserver), it prints one line
// on stdout, {"address": "127.0.0.1:PORT"}, and serves until stdin closes
// (its parent exited) or it receives SIGTERM or SIGINT; it then tears the
// server down. Its log goes to stderr.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	servertesting "k8s.io/apiextensions-apiserver/pkg/cmd/server/testing"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// fakeKubeconfig is the fixture's: authentication and authorization
// delegation need a kubeconfig to start, and nothing answers at its
// address, so a client outside system:masters is refused (403).
const fakeKubeconfig = `
apiVersion: v1
kind: Config
clusters:
- cluster:
    server: http://127.1.2.3:12345
  name: integration
contexts:
- context:
    cluster: integration
    user: test
  name: default-context
current-context: default-context
users:
- name: test
  user:
    password: test
    username: test
`

// stderrLogger is StartTestServer's logger outside a Go test.
type stderrLogger struct{}

func (stderrLogger) Errorf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "crd-apiserver: error: "+format+"\n", args...)
}

func (stderrLogger) Fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "crd-apiserver: "+format+"\n", args...)
	os.Exit(1)
}

func (stderrLogger) Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "crd-apiserver: "+format+"\n", args...)
}

// ready is the line printed once the server is ready.
type ready struct {
	Address string `json:"address"`
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "crd-apiserver: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	kubeconfig, err := os.CreateTemp("", "crd-apiserver-kubeconfig")
	if err != nil {
		return err
	}
	defer os.Remove(kubeconfig.Name())
	if _, err := kubeconfig.WriteString(fakeKubeconfig); err != nil {
		return err
	}
	if err := kubeconfig.Close(); err != nil {
		return err
	}

	// StartDefaultServer's flags (fixtures/server.go), then the caller's.
	flags := append([]string{
		"--authentication-skip-lookup",
		"--authentication-kubeconfig", kubeconfig.Name(),
		"--authorization-kubeconfig", kubeconfig.Name(),
		"--kubeconfig", kubeconfig.Name(),
		// disable admission and filters that require talking to kube-apiserver
		"--enable-priority-and-fairness=false",
		"--disable-admission-plugins", "NamespaceLifecycle,MutatingAdmissionWebhook,ValidatingAdmissionWebhook,ValidatingAdmissionPolicy,MutatingAdmissionPolicy",
	}, args...)
	server, err := servertesting.StartTestServer(stderrLogger{}, nil, flags, nil)
	if err != nil {
		return err
	}

	if err := waitReady(server); err != nil {
		server.TearDownFn()
		return err
	}
	line, err := json.Marshal(ready{Address: fmt.Sprintf("127.0.0.1:%d", server.ServerOpts.RecommendedOptions.SecureServing.BindPort)})
	if err != nil {
		return err
	}
	fmt.Println(string(line))

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	closed := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, bufio.NewReader(os.Stdin))
		close(closed)
	}()
	select {
	case <-stop:
	case <-closed:
	}
	// The teardown waits for the storage layer, which never ends once etcd
	// is gone: it gets a few seconds, then the process exits anyway.
	done := make(chan struct{})
	go func() {
		server.TearDownFn()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		fmt.Fprintln(os.Stderr, "crd-apiserver: teardown did not finish within 5s; exiting")
	}
	return nil
}

// waitReady polls /readyz?exclude=informer-sync with the server's loopback
// client, as StartTestServer polls /healthz.
func waitReady(server servertesting.TestServer) error {
	client, err := kubernetes.NewForConfig(server.ClientConfig)
	if err != nil {
		return err
	}
	var last string
	err = wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		body, err := client.CoreV1().RESTClient().Get().AbsPath("/readyz").Param("exclude", "informer-sync").DoRaw(ctx)
		if err == nil {
			return true, nil
		}
		last = fmt.Sprintf("%v: %s", err, body)
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("/readyz?exclude=informer-sync did not answer ok within a minute (%v): %s", err, last)
	}
	return nil
}
