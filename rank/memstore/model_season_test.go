package memstore_test

import (
	"context"
	"strconv"

	"github.com/wsgateway/wsgateway/rank"
)

// Scan reads the model's sorted entries from an offset (the model's
// cursor): it has no periods, no hidden listing and no writes during a
// scan to be stable against.
func (m *model) Scan(ctx context.Context, id string, sel rank.PeriodSel, from rank.Cursor, limit int, _ bool) (rank.ScanPage, error) {
	if err := rank.CheckScan(limit); err != nil {
		return rank.ScanPage{}, err
	}
	off := 0
	if from != "" {
		var err error
		if off, err = strconv.Atoi(string(from)); err != nil {
			return rank.ScanPage{}, rank.ErrBadRequest
		}
	}
	pg, err := m.Top(ctx, id, sel, off, limit)
	if err != nil {
		return rank.ScanPage{}, err
	}
	out := rank.ScanPage{Board: id, Entries: []rank.ScanEntry{}}
	for _, e := range pg.Entries {
		out.Entries = append(out.Entries, rank.ScanEntry{Entry: e})
	}
	if next := off + len(pg.Entries); int64(next) < pg.Total {
		out.Next = rank.Cursor(strconv.Itoa(next))
	}
	return out, nil
}

// NameProfiles names the profiles that have no name.
func (m *model) NameProfiles(_ context.Context, names []rank.MemberName) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var changed []string
	for _, mn := range names {
		p := m.profiles[mn.Member]
		if p.Name != "" {
			continue
		}
		if m.profiles == nil {
			m.profiles = map[string]rank.Profile{}
		}
		p.Name = mn.Name
		m.profiles[mn.Member] = p
		changed = append(changed, mn.Member)
	}
	return changed, nil
}

// The model keeps no import marks: every import is new to it.
func (m *model) ImportMark(context.Context, string, string) (rank.ImportMark, error) {
	return rank.ImportMark{}, nil
}

func (m *model) MarkImport(context.Context, string, string, int64) error { return nil }
