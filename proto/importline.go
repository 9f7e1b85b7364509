package proto

import (
	"github.com/wsgateway/wsgateway/internal/meta"
	"github.com/wsgateway/wsgateway/rank"
)

// ImportLine is one line of an import body (docs/protocol.md §18):
// {"member","delta"|"value"} with optional "name" and "meta".
type ImportLine struct {
	Member string
	Op     rank.Op
	Amount int64
	Name   string // "" when absent
	Meta   meta.Meta
}

// importFields are the fields of an import line.
const importFields = FieldMember | FieldDelta | FieldValue | FieldName | FieldMeta

// DecodeImportLine parses one import line with the rules, and the words,
// of a REST score event (DecodeScore): one JSON object, exact names, no
// duplicates, a JSON integer within ±(2^53-1). The member id and the
// name's rules are the caller's.
func DecodeImportLine(b []byte) (l ImportLine, err error) {
	var raw rawFields
	if err := scanObject(b, importFields, "an import line", &raw); err != nil {
		return l, err
	}
	if l.Member, err = stringField(&raw, FieldMember); err != nil {
		return l, err
	}
	if l.Op, l.Amount, err = scoreNumber(&raw); err != nil {
		return l, err
	}
	if l.Name, err = stringField(&raw, FieldName); err != nil {
		return l, err
	}
	if raw.has&FieldName != 0 && l.Name == "" {
		return l, BadRequest("field name must not be empty")
	}
	if l.Meta, err = metaField(&raw); err != nil {
		return l, err
	}
	if raw.has&FieldMember == 0 {
		return l, MissingField("member")
	}
	return l, nil
}
