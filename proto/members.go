package proto

import (
	"encoding/json"
	"fmt"
	"slices"
)

// TypeMembers is the live frame of a member list (§11).
const TypeMembers = "members"

// MaxMembers bounds a member list: subscribe's members and REST's ids (§11).
const MaxMembers = 100

// Members is the live frame of a member list: the listed members that have
// an entry, in rank order, each with its rank on the whole board (§11).
type Members struct {
	Type     string  `json:"type"`
	Board    string  `json:"board"`
	Entries  []Entry `json:"entries"`
	Total    int64   `json:"total"`
	Seq      int64   `json:"seq"`
	TS       int64   `json:"ts"` // unix ms
	Decimals int     `json:"-"`  // as PageReply.Decimals
}

// subscribeFields reads subscribe's members (1..MaxMembers strings, a
// repeat kept once) and meta (a boolean). Whether each id is a valid
// member id is the caller's rule, as for member.
func subscribeFields(raw *rawFields) (members []string, withMeta bool, err error) {
	if raw.has&FieldMeta != 0 {
		switch string(raw.get(FieldMeta)) {
		case "true":
			withMeta = true
		case "false":
		default:
			return nil, false, BadRequest("field meta must be a boolean in subscribe")
		}
	}
	if raw.has&FieldMembers == 0 {
		return nil, withMeta, nil
	}
	if raw.has&(FieldMember|FieldAround) != 0 {
		return nil, false, BadRequest("send members or member and around, not both")
	}
	b := raw.get(FieldMembers)
	var ids []string
	// A JSON null would unmarshal to an empty list without an error.
	if len(b) == 0 || b[0] != '[' || json.Unmarshal(b, &ids) != nil {
		return nil, false, BadRequest("field members must be an array of member ids")
	}
	if len(ids) == 0 || len(ids) > MaxMembers {
		return nil, false, BadRequest(fmt.Sprintf("field members must list 1..%d member ids, not %d", MaxMembers, len(ids)))
	}
	out := ids[:0]
	for _, id := range ids {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out, withMeta, nil
}
