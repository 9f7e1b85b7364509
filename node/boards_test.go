package node_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/node"
	"github.com/wsgateway/wsgateway/rank"
)

// TestBoardsFile: a boards file in YAML or JSON, as a list or under
// "boards", read with ParseBoard's rules; anything it refuses, a
// duplicate id or another shape is refused.
func TestBoardsFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	yamlFile := write("boards.yaml", `
boards:
  - id: run_hero
    title: Run hero
    order: desc
    reset: daily
    tz: Europe/Paris
  - id: speedrun
    order: asc
    mode: best
    idempotency_window: 1h
`)
	got, err := node.ReadBoards(yamlFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Reset != rank.Daily || got[0].TZ != "Europe/Paris" || got[1].Order != rank.Asc ||
		got[1].Mode != rank.Best || !got[1].ClientWrites || got[1].Top != 10 || time.Duration(got[1].IdempotencyWindow) != time.Hour {
		t.Fatalf("yaml boards = %+v", got)
	}
	jsonFile := write("boards.json", `[{"id":"a"},{"id":"b","top":5}]`)
	if got, err := node.ReadBoards(jsonFile); err != nil || len(got) != 2 || got[1].Top != 5 {
		t.Fatalf("json boards = %+v, %v", got, err)
	}
	if got, err := node.ReadBoards(""); got != nil || err != nil {
		t.Fatalf("no file: %v, %v", got, err)
	}
	if _, err := node.ReadBoards(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("a missing file was read")
	}
	for name, body := range map[string]string{
		"bad.json":   `[{"id":"a","order":"sideways"}]`,
		"dup.json":   `[{"id":"a"},{"id":"a"}]`,
		"extra.json": `[{"id":"a","colour":"red"}]`,
		"noid.json":  `[{"title":"x"}]`,
		"shape.json": `{"boards":[],"more":1}`,
		"bad.yaml":   "boards: [ {id: a, top: 500} ]",
	} {
		if _, err := node.ReadBoards(write(name, body)); err == nil {
			t.Errorf("%s: accepted %s", name, body)
		}
	}
}
