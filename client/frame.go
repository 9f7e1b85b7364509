package client

import (
	"encoding/json"
	"time"

	"github.com/wsgateway/wsgateway/proto"
)

// jsonUnmarshal is json.Unmarshal; named so the decoding policy lives here.
func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// frame is the union of every server message: one decode per frame, then
// a conversion to the proto type its `type` names. Numbers that may be null
// are pointers.
type frame struct {
	Type      string        `json:"type"`
	ID        string        `json:"id"`
	Board     string        `json:"board"`
	Member    string        `json:"member"`
	Score     *int64        `json:"score"`
	Rank      *int64        `json:"rank"`
	PrevRank  *int64        `json:"prev_rank"`
	Duplicate bool          `json:"duplicate"`
	Seq       int64         `json:"seq"`
	Offset    int           `json:"offset"`
	Entries   []proto.Entry `json:"entries"`
	Total     int64         `json:"total"`
	Around    []proto.Entry `json:"around"`
	TS        int64         `json:"ts"`
	Period    int64         `json:"period"`
	Exp       int64         `json:"exp"`
	Cohort    string        `json:"cohort"` // ack and top frames of cohort boards (§12)
	Tier      string        `json:"tier"`
	Capped    bool          `json:"capped"`  // acks of capped boards (§18)
	Applied   int64         `json:"applied"` // with capped: the part of the delta applied
	// ack and rank replies of region boards, top frames of a region (§17)
	Region     string `json:"region"`
	RegionRank int64  `json:"region_rank"`
	Held       bool   `json:"held"` // ack: the member is held (§16)
	// top (final) and board frames (R19)
	Final    bool   `json:"final"`
	State    string `json:"state"`
	StartsAt *int64 `json:"starts_at"`
	EndsAt   *int64 `json:"ends_at"`
	FinalAt  *int64 `json:"final_at"`
	Viewers  *int   `json:"viewers"` // §14, in board frames that carry it
	// welcome
	Role       string       `json:"role"`
	Node       string       `json:"node"`
	ServerTime int64        `json:"server_time"`
	Limits     proto.Limits `json:"limits"`
	// subscribed (§15)
	Epoch   string `json:"epoch"`
	Resumed *bool  `json:"resumed"`
	// draining (§15)
	ReconnectAfterMS int64 `json:"reconnect_after_ms"`
	// error
	Code         string `json:"code"`
	Message      string `json:"message"`
	RetryAfterMS int64  `json:"retry_after_ms"`
	Reason       string `json:"reason"` // board_closed's (R30), rejected's (§16)

	// decimals is how many decimals the frame's scores had (hot boards,
	// R22): they are decoded as integers in units of 10^-decimals.
	decimals int
}

// scoreDecimals is the most decimals a board's scores carry (hot boards).
const scoreDecimals = 3

func (f *frame) decode(b []byte) error {
	b, d := proto.Undecimalize(b, scoreDecimals)
	if err := jsonUnmarshal(b, f); err != nil {
		return err
	}
	f.decimals = d
	return nil
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

func (f *frame) err() *Error {
	return &Error{Code: f.Code, Message: f.Message, RetryAfter: time.Duration(f.RetryAfterMS) * time.Millisecond, Reason: f.Reason}
}

func (f *frame) welcome() proto.Welcome {
	return proto.Welcome{Type: f.Type, Member: f.Member, Role: f.Role, Node: f.Node, ServerTime: f.ServerTime, Exp: f.Exp, Limits: f.Limits}
}

func (f *frame) ack() proto.Ack {
	return proto.Ack{Type: f.Type, ID: f.ID, Board: f.Board, Member: f.Member, Score: deref(f.Score), Rank: deref(f.Rank),
		PrevRank: f.PrevRank, Duplicate: f.Duplicate, Seq: f.Seq, Period: f.Period, Cohort: f.Cohort, Tier: f.Tier, Region: f.Region, RegionRank: f.RegionRank, Decimals: f.decimals,
		Capped: f.Capped, Applied: f.Applied, Held: f.Held}
}

func (f *frame) page() proto.PageReply {
	return proto.PageReply{Type: f.Type, ID: f.ID, Board: f.Board, Offset: f.Offset, Entries: f.Entries, Total: f.Total, Period: f.Period, Decimals: f.decimals}
}

func (f *frame) rankReply() proto.RankReply {
	return proto.RankReply{Type: f.Type, ID: f.ID, Board: f.Board, Member: f.Member, Rank: f.Rank, Score: f.Score, Around: f.Around, Period: f.Period,
		Cohort: f.Cohort, Tier: f.Tier, Region: f.Region, RegionRank: f.RegionRank, Decimals: f.decimals}
}

func (f *frame) top() proto.Top {
	return proto.Top{Type: f.Type, Board: f.Board, Seq: f.Seq, Entries: f.Entries, Total: f.Total, TS: f.TS,
		Final: f.Final, Period: f.Period, Cohort: f.Cohort, Region: f.Region, Decimals: f.decimals}
}

func (f *frame) board() proto.Board {
	return proto.Board{Type: f.Type, Board: f.Board, State: f.State, Period: f.Period,
		StartsAt: f.StartsAt, EndsAt: f.EndsAt, FinalAt: f.FinalAt, TS: f.TS, Viewers: f.Viewers}
}

func (f *frame) view() proto.View {
	return proto.View{Type: f.Type, Board: f.Board, Member: f.Member, Rank: f.Rank, Score: f.Score, Around: f.Around, Seq: f.Seq, TS: f.TS, Region: f.Region, Decimals: f.decimals}
}
