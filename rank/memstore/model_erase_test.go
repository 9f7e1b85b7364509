package memstore_test

import (
	"context"
	"slices"

	"github.com/wsgateway/wsgateway/rank"
)

// Erase is R29 on the model: the member leaves every map that holds it.
func (m *model) Erase(_ context.Context, member string) (rank.Erasure, error) {
	if !rank.ValidMemberID(member) {
		return rank.Erasure{}, rank.ErrInvalidMember
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := rank.Erasure{Boards: []string{}}
	delete(m.global, member)
	delete(m.profiles, member)
	for id, b := range m.boards {
		_, shown := b.scores[member]
		_, hidden := b.hidden[member]
		_, named := b.names[member]
		_, banned := b.bans[member]
		_, gbanned := b.gbans[member]
		had := shown || hidden || named || banned || gbanned
		if shown || hidden {
			out.Entries++
		}
		delete(b.scores, member)
		delete(b.hidden, member)
		delete(b.names, member)
		delete(b.bans, member)
		delete(b.gbans, member)
		for k := range b.idem {
			if k[0] == member {
				delete(b.idem, k)
				had = true
			}
		}
		if had {
			b.seq++
			out.Boards = append(out.Boards, id)
		}
	}
	slices.Sort(out.Boards)
	return out, nil
}

// Export reads the model through its own Store methods, as both engines do.
func (m *model) Export(ctx context.Context, member string) (rank.Export, error) {
	return rank.ExportOf(ctx, m, member)
}
