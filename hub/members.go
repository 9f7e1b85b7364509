package hub

import (
	"github.com/wsgateway/wsgateway/hub/live"
	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
)

// The decoder's bound on a member list and the live engine's must agree
// (each line fails to compile when they differ).
const (
	_ = uint(proto.MaxMembers-live.MaxMembers) + uint(live.MaxMembers-proto.MaxMembers)
)

// subscribeSpec is what a subscribe asks of the live engine (docs/protocol.md
// §4, §11). Top stays -1 when absent (the board's default applies), except
// with members: a list subscription gets members frames, and top frames
// only when it asks for them.
func (c *conn) subscribeSpec(req proto.Message) (live.Spec, error) {
	sp := live.Spec{Board: req.Board, Top: req.Top, Around: req.Around, Meta: req.WithMeta}
	if req.Has&proto.FieldCohort != 0 {
		if req.Cohort == "" {
			return sp, proto.BadRequest("cohort: an empty id")
		}
		sp.Group = live.Group{Kind: live.Cohort, ID: req.Cohort}
	}
	if req.Has&proto.FieldMembers == 0 {
		m, err := c.member(req)
		sp.Member = m
		return sp, err
	}
	for _, id := range req.Members {
		if err := rank.CheckMemberID(id); err != nil {
			return sp, err
		}
	}
	sp.Members = req.Members
	sp.Top = max(sp.Top, 0)
	if c.p.Limited() && !c.anon {
		sp.Owner = c.sub // its distinct ids are bounded (live.Config.MaxListIDs)
	}
	return sp, nil
}
