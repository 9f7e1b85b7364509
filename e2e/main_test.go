package e2e

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/testenv"
)

// Test flags. The long soak runs only when asked for (-soak or LB_SOAK).
var soakFlag = flag.Duration("soak", 0, "run the long soak for this long (e.g. 10m); LB_SOAK does the same")

// gatewayBin is the wsgateway binary built once by TestMain for every test
// of this binary; set before any test runs and never written again.
var gatewayBin string

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		// Every test here calls testenv.Long and skips (startGateway
		// too, for a test without the call): no gateway to build.
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "wsgateway-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	if pre := os.Getenv("LB_E2E_BIN"); pre != "" {
		gatewayBin = pre // a binary built beforehand (debugging, bisecting)
	} else if gatewayBin, err = buildGateway(dir); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// buildGateway builds ./cmd/wsgateway into dir. LB_E2E_RACE=1 builds it
// with the race detector (slower, for hunting gateway races).
func buildGateway(dir string) (string, error) {
	var flags []string
	if os.Getenv("LB_E2E_RACE") == "1" {
		flags = append(flags, "-race")
	}
	start := time.Now()
	bin, err := testenv.BuildGateway(dir, flags...)
	if d := time.Since(start); err == nil && d > 30*time.Second {
		fmt.Fprintf(os.Stderr, "e2e: building the gateway took %s\n", d.Round(time.Second))
	}
	return bin, err
}

// soakDuration is the long soak's length: -soak, else LB_SOAK, else 0.
func soakDuration() time.Duration {
	if *soakFlag > 0 {
		return *soakFlag
	}
	if d, err := time.ParseDuration(os.Getenv("LB_SOAK")); err == nil {
		return d
	}
	return 0
}

// execHelp is the gateway's --help text (its flags), for tests that adapt
// to flags added later.
func execHelp() (string, error) {
	out, err := exec.Command(gatewayBin, "--help").CombinedOutput()
	if err != nil && len(out) == 0 {
		return "", err
	}
	return string(out), nil
}
