package proto

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

var benchPage = PageReply{Type: TypePage, ID: "c1-r12", Board: "run_hero", Entries: []Entry{{Rank: 1, Member: "alice", Score: 120}, {Rank: 2, Member: "bob", Score: 99}}, Total: 2}

func BenchmarkMarshalPage(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Marshal(benchPage); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkJSONMarshalPage(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(benchPage); err != nil {
			b.Fatal(err)
		}
	}
}

// TestMarshalIsEncoderWithoutHTMLEscape: Marshal writes the bytes of a
// json.Encoder with SetEscapeHTML(false), however <, >, & and backslashes
// mix with other escapes.
func TestMarshalIsEncoderWithoutHTMLEscape(t *testing.T) {
	for _, s := range []string{"", "plain", "<jwt>", "a & b", `\u003c`, `\\u003c`, "\\<", "<\x01>", "é\u2028<", `"<"`, "\\", "x\\", "&&&<<<>>>"} {
		for _, v := range []any{s, map[string]string{"message": s}, []string{s, s}} {
			got, err := Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			var want bytes.Buffer
			enc := json.NewEncoder(&want)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(v); err != nil {
				t.Fatal(err)
			}
			if string(got) != strings.TrimSuffix(want.String(), "\n") {
				t.Errorf("Marshal(%q) = %s, want %s", v, got, want.String())
			}
		}
	}
}
