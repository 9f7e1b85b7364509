package api

// Member lists and history (docs/protocol.md §11): GET …/members?ids= reads
// the listed members in rank order, GET …/members/{member}/history a
// member's last applied events.

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/wsgateway/wsgateway/internal/meta"
	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
)

// MaxMembers bounds the ids of one member list (§11).
const MaxMembers = 100

// membersBody answers GET …/members: the listed members that have an
// entry, in rank order, each with its rank on the whole board.
type membersBody struct {
	Board   string        `json:"board"`
	Period  int64         `json:"period,omitempty"`
	Entries []proto.Entry `json:"entries"`
	Total   int64         `json:"total"`
}

func (a *API) memberList(c *fiber.Ctx) error {
	id, err := boardParam(c)
	if err != nil {
		return err
	}
	ids, err := memberIDs(c.Query("ids"))
	if err != nil {
		return err
	}
	ctx := a.ctx()
	// One snapshot of every listed member: ranks, scores and meta agree;
	// ranks on the whole board, cohort boards included (§11).
	rs, err := a.deps.Store.Ranks(ctx, id, rank.PeriodSel(c.Query("period")), ids, rank.BoardRanks)
	if err != nil {
		return fmt.Errorf("api: members %s: %w", id, err)
	}
	found := make([]rank.Entry, 0, len(rs.Members))
	for _, mr := range rs.Members {
		for _, e := range mr.Around {
			if e.Member == mr.Member {
				found = append(found, e)
			}
		}
	}
	slices.SortStableFunc(found, func(x, y rank.Entry) int {
		if c := cmp.Compare(x.Rank, y.Rank); c != 0 {
			return c
		}
		return strings.Compare(x.Member, y.Member) // shared ranks: a stable order
	})
	a.decorate(ctx, found)
	return sendScores(c, membersBody{Board: id, Period: rs.Period, Entries: proto.EntriesOf(found), Total: rs.Total}, rs.Decimals)
}

// memberIDs parses ids=a,b,c: 1..MaxMembers valid member ids, repeats
// read once.
func memberIDs(q string) ([]string, error) {
	if q == "" {
		return nil, errf(proto.CodeBadRequest, "ids: list 1..%d member ids, comma separated", MaxMembers)
	}
	parts := strings.Split(q, ",")
	if len(parts) > MaxMembers {
		return nil, errf(proto.CodeBadRequest, "ids: %d ids, at most %d", len(parts), MaxMembers)
	}
	out := make([]string, 0, len(parts))
	for _, m := range parts {
		if err := rank.CheckMemberID(m); err != nil {
			return nil, err
		}
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out, nil
}

// historyEvent is one event of GET …/history: {"id","delta"|"value",
// "score","at","meta"}.
type historyEvent struct {
	ID    string    `json:"id"`
	Delta *int64    `json:"delta,omitempty"`
	Value *int64    `json:"value,omitempty"`
	Score int64     `json:"score"`
	At    int64     `json:"at"`
	Meta  meta.Meta `json:"meta,omitempty"`
}

type historyBody struct {
	Events []historyEvent `json:"events"`
}

func (a *API) history(c *fiber.Ctx) error {
	id, err := boardParam(c)
	if err != nil {
		return err
	}
	m := c.Params("member")
	if err := rank.CheckMemberID(m); err != nil {
		return err
	}
	h, err := a.deps.Store.History(a.ctx(), id, rank.PeriodSel(c.Query("period")), m)
	if err != nil {
		return fmt.Errorf("api: history %s: %w", id, err)
	}
	out := historyBody{Events: make([]historyEvent, len(h))}
	for i, e := range h {
		ev := historyEvent{ID: e.ID, Score: e.Score, At: e.At, Meta: e.Meta}
		amount := e.Amount
		if e.Op == rank.OpDelta {
			ev.Delta = &amount
		} else {
			ev.Value = &amount
		}
		out.Events[i] = ev
	}
	return sendScores(c, out, 0) // hot boards, whose scores have decimals, keep no history
}
