package node

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/wsgateway/wsgateway/rank"
)

// ReadBoards reads a file of board configs (JSON or YAML: a list of
// boards, or an object with a "boards" list), validated as PUT would, for
// Config.Boards; "" is none.
func ReadBoards(path string) ([]rank.Board, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	boards, err := parseBoardsFile(path, data)
	if err != nil {
		return nil, fmt.Errorf("node: %s: %w", path, err)
	}
	return boards, nil
}

func parseBoardsFile(path string, data []byte) ([]rank.Board, error) {
	jsonData := data
	if ext := strings.ToLower(filepath.Ext(path)); ext == ".yaml" || ext == ".yml" {
		// YAML goes through a generic value to JSON so both formats share
		// rank.ParseBoard's strict decoding and defaults.
		var v any
		if err := yaml.Unmarshal(data, &v); err != nil {
			return nil, err
		}
		j, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		jsonData = j
	}
	var items []json.RawMessage
	trimmed := bytes.TrimSpace(jsonData)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		var wrapper struct {
			Boards []json.RawMessage `json:"boards"`
		}
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&wrapper); err != nil {
			return nil, fmt.Errorf("want a list of boards or {\"boards\": [...]}: %v", err)
		}
		items = wrapper.Boards
	} else if err := json.Unmarshal(trimmed, &items); err != nil {
		return nil, fmt.Errorf("want a list of boards or {\"boards\": [...]}: %v", err)
	}
	out := make([]rank.Board, 0, len(items))
	seen := map[string]bool{}
	for i, raw := range items {
		b, err := rank.ParseBoard("", raw)
		if err != nil {
			return nil, fmt.Errorf("board #%d: %w", i+1, err)
		}
		if seen[b.ID] {
			return nil, fmt.Errorf("board #%d: id %s appears twice", i+1, b.ID)
		}
		seen[b.ID] = true
		out = append(out, b)
	}
	return out, nil
}
