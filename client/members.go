package client

import (
	"encoding/json"

	"github.com/wsgateway/wsgateway/proto"
)

// Members delivers the members frames of a subscription with
// SubOpts.Members: the listed members that have an entry, in rank order,
// each with its rank on the whole board and its meta (docs/lists.md).
func (s *Subscription) Members() <-chan proto.Members { return s.list }

func (s *Subscription) offerMembers(m proto.Members) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.saw(m.Seq)
	if !s.closed {
		offer(s.list, m)
	}
}

// listReq adds the options of §11 to a subscribe request: members (the
// gateway sends no top frames with them unless top is given) and meta.
func (o SubOpts) listReq(r *proto.Request) {
	if len(o.Members) > 0 {
		r.Members = o.Members
	}
	if o.Meta {
		r.Meta = json.RawMessage("true")
	}
}

func (f *frame) members() proto.Members {
	return proto.Members{Type: f.Type, Board: f.Board, Entries: f.Entries, Total: f.Total, Seq: f.Seq, TS: f.TS, Decimals: f.decimals}
}

// dispatchMembers routes a members frame to its subscription and callback.
func (c *Client) dispatchMembers(m proto.Members) {
	if s := c.sub(m.Board); s != nil {
		s.offerMembers(m)
	}
	if c.opts.OnMembers != nil {
		c.opts.OnMembers(m)
	}
}
