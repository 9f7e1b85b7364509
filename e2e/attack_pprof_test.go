package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/testenv"
)

// TestPprofCmdlineRedacted is issue 33 B12: the JWT key given as a flag
// (as this suite gives it) does not show on --metrics-addr's
// /debug/pprof/cmdline; the rest of the command line does.
func TestPprofCmdlineRedacted(t *testing.T) {
	t.Parallel()
	maddr := "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
	g := startGateway(t, gwOpts{Args: []string{"--metrics-addr", maddr}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var body []byte
	testenv.Eventually(t, 5*time.Second, "pprof on --metrics-addr", func() error {
		var err error
		_, body, err = rest(ctx, "GET", "http://"+maddr+"/debug/pprof/cmdline", "", nil, nil)
		return err
	})
	if strings.Contains(string(body), secret) || !strings.Contains(string(body), "--jwt-secret\x00xxxxx") || !strings.Contains(string(body), g.Addr) {
		t.Fatalf("cmdline %q: want the key redacted, the rest shown", body)
	}
}
