package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
)

// versionCmd prints the module version and the VCS stamp Go embeds in the
// binary (go build records them; go run and go test do not).
func versionCmd(args []string, stdout, stderr io.Writer) error {
	f := newFlagSet("wsgateway version", func(string) string { return "" }, stderr)
	if err := f.parse(args); err != nil {
		return flagError(err)
	}
	_, err := io.WriteString(stdout, versionText(debug.ReadBuildInfo()))
	return err
}

// versionText renders build info as "wsgateway <version>" and a line per
// VCS setting; ok false (a binary built without module support) still
// names the Go version.
func versionText(bi *debug.BuildInfo, ok bool) string {
	var b strings.Builder
	version, goVersion := "(unknown)", runtime.Version()
	if ok {
		version, goVersion = bi.Main.Version, bi.GoVersion
		if version == "" {
			version = "(devel)"
		}
	}
	fmt.Fprintf(&b, "wsgateway %s\n", version)
	fmt.Fprintf(&b, "  go        %s %s/%s\n", goVersion, runtime.GOOS, runtime.GOARCH)
	if !ok {
		return b.String()
	}
	labels := map[string]string{"vcs.revision": "revision", "vcs.time": "time", "vcs.modified": "modified"}
	for _, s := range bi.Settings {
		if l, found := labels[s.Key]; found {
			fmt.Fprintf(&b, "  %-9s %s\n", l, s.Value)
		}
	}
	return b.String()
}
