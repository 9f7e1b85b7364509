package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/gofiber/fiber/v2"

	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
)

// patchBoard answers PATCH /api/v1/boards/{board} (docs/protocol.md §14): an
// RFC 7396 merge patch of the stored config. What the patch leaves out keeps
// its stored value, where PUT would reset it to its default; a field fixed
// at creation patched to another value is a 409 naming it. The result goes
// through the same store call and the same announcement as PUT, so caches,
// live frames and the other nodes hear of it alike.
//
// Two PATCHes of one board at once both read the stored config before
// either writes: the later write wins whole, as two PUTs would.
func (a *API) patchBoard(c *fiber.Ctx) error {
	id, err := managedBoard(c)
	if err != nil {
		return err
	}
	patch, keys, err := parsePatch(c.Body())
	if err != nil {
		return err
	}
	ctx := a.ctx()
	old, err := a.deps.Store.GetBoard(ctx, id)
	if errors.Is(err, rank.ErrUnknownBoard) {
		return errf(proto.CodeUnknownBoard, "board %s does not exist: PUT creates it", id)
	}
	if err != nil {
		return fmt.Errorf("api: patch board %s: %w", id, err)
	}
	next, err := mergeBoard(old, patch)
	if err != nil {
		return err
	}
	if err := mayReach(principal(c), &old, next); err != nil {
		return err
	}
	if err := checkFixed(old, next); err != nil {
		return err
	}
	if next.Hook.URL != old.Hook.URL {
		if err := a.checkHookURL(ctx, next); err != nil {
			return err
		}
	}
	stored, err := a.deps.Store.PutBoard(ctx, next)
	if err != nil {
		return fmt.Errorf("api: patch board %s: %w", id, err)
	}
	a.log.Info("api: board patched", "board", id, "fields", keys, "sub", principal(c).Member)
	if a.deps.Boards != nil {
		a.deps.Boards.BoardChanged(id, false)
	}
	return c.JSON(stored.WithoutSecrets())
}

// parsePatch reads a merge patch: one JSON object, no key twice (a repeated
// key would leave which value wins to the decoder). It returns the object
// and its top-level keys, sorted, for the log.
func parsePatch(body []byte) (map[string]any, []string, error) {
	bad := func(format string, args ...any) error {
		return errf(proto.CodeBadRequest, "merge patch: "+format, args...)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, nil, bad("want a JSON object of the fields to change")
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, bad("%v", err)
		}
		key, _ := tok.(string)
		if slices.Contains(keys, key) {
			return nil, nil, bad("field %s: appears twice", key)
		}
		keys = append(keys, key)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, nil, bad("field %s: %v", key, err)
		}
	}
	var patch map[string]any
	dec = json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber() // 2^53-1 and longer numbers pass through exactly
	if err := dec.Decode(&patch); err != nil {
		return nil, nil, bad("%v", err)
	}
	if dec.More() {
		return nil, nil, bad("trailing data after the JSON object")
	}
	slices.Sort(keys)
	return patch, keys, nil
}

// mergeBoard applies patch to old's JSON (RFC 7396) and parses the result
// as PUT parses a body: strictly, with defaults for what the merge removed
// (a field patched to null) and every field validated, so an invalid result
// is a 400 naming the field.
func mergeBoard(old rank.Board, patch map[string]any) (rank.Board, error) {
	// A config stored before v1.1 has no retain, which means the default
	// (Board.Retained); written as 0 it would fail validation.
	old.Retain = old.Retained()
	stored, err := json.Marshal(old)
	if err != nil {
		return rank.Board{}, fmt.Errorf("api: patch board %s: encode: %w", old.ID, err)
	}
	var target any
	dec := json.NewDecoder(bytes.NewReader(stored))
	dec.UseNumber()
	if err := dec.Decode(&target); err != nil {
		return rank.Board{}, fmt.Errorf("api: patch board %s: decode: %w", old.ID, err)
	}
	merged, err := json.Marshal(mergePatch(target, patch))
	if err != nil {
		return rank.Board{}, fmt.Errorf("api: patch board %s: encode: %w", old.ID, err)
	}
	return rank.ParseBoard(old.ID, merged)
}

// mergePatch is RFC 7396's MergePatch: an object patch merges key by key
// (null removes), anything else replaces the target.
func mergePatch(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	if !ok {
		t = make(map[string]any, len(p))
	}
	for k, v := range p {
		if v == nil {
			delete(t, k)
			continue
		}
		t[k] = mergePatch(t[k], v)
	}
	return t
}

// checkFixed refuses a change to a field fixed at creation (§8, §9): the
// board's keys and the meaning of its stored scores depend on them. The
// 409 names the field; delete and re-create the board to change it.
func checkFixed(old, next rank.Board) error {
	fixed := func(field string, was any) error {
		return &Error{code: proto.CodeReadOnly, status: http.StatusConflict,
			msg: fmt.Sprintf("field %s: fixed at creation (%v); delete and re-create the board to change it", field, was)}
	}
	switch {
	case old.ShardCount() != next.ShardCount():
		return fixed("shards", old.ShardCount())
	case old.GroupID() != next.GroupID():
		return fixed("group", fmt.Sprintf("%q", old.GroupID()))
	case old.Source != next.Source:
		return fixed("source", "its source boards")
	case old.Decay != next.Decay:
		return fixed("decay", "its decay")
	}
	return nil
}
