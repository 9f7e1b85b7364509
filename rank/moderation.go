package rank

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode"
	"unicode/utf8"
)

// Ban hides a member from a board (docs/protocol.md §7, R21) without deleting
// anything: its entries in every kept period move aside with their scores
// and tie keys, its events get ErrBanned, and lifting the ban (or Until
// passing) puts the entries back exactly as they were.
type Ban struct {
	Member string
	Reason string
	// Until is when the ban ends by itself; zero = until lifted. A ban
	// whose Until has passed on the store's clock is lifted: the next read
	// or apply of the board sees it so.
	Until time.Time
	// At is when the ban was put, on the store's clock (set by the store).
	At time.Time
	// By is the admin's sub (logged, listed; never shown to players).
	By string
}

// Live reports whether b still hides its member at now.
func (b Ban) Live(now time.Time) bool { return b.Until.IsZero() || now.Before(b.Until) }

// MaxReasonChars bounds a ban's reason (§7).
const MaxReasonChars = 256

// ErrInvalidBan is a ban body that fails validation; the wrapping message
// names the field.
var ErrInvalidBan = &Error{"bad_request", "invalid ban"}

// ErrBanned is an event of a member banned from the board (R21): nothing
// changed.
var ErrBanned = &Error{"banned", "member is banned from this board"}

// ErrNoBan is a lift of a ban that does not exist (or has expired).
var ErrNoBan = errors.New("rank: no such ban")

// ErrNoEntry is a removal of a member that has no entry in that period.
var ErrNoEntry = errors.New("rank: no such entry")

// Moderation is an engine's side of §7's bans and removal. Every method
// validates ids (ErrInvalidBoard, ErrInvalidMember); board methods return
// ErrUnknownBoard for a board that does not exist. A change made here is a
// change of the board's reads: the caller re-reads frames (the engine's
// Sink does not hear of it).
type Moderation interface {
	// BanMember puts (or replaces) the member's ban on the board and hides
	// its entries in every period the board keeps. b.Until, when set, must
	// be after the store's clock (ErrInvalidBan naming until). It returns
	// the ban as stored (At set).
	BanMember(ctx context.Context, board string, b Ban) (Ban, error)
	// LiftBan removes the member's ban from the board; its entries come
	// back unless a global ban still hides them. ErrNoBan when there was none.
	LiftBan(ctx context.Context, board, member string) error
	// Bans lists the board's own live bans (not global ones), by member.
	Bans(ctx context.Context, board string) ([]Ban, error)
	// RemoveMember deletes the member's entry (its score) from one period
	// of the board, hidden or not. ErrNoEntry when it had none.
	RemoveMember(ctx context.Context, board, member string, period PeriodSel) error

	// PutGlobalBan bans the member from every board, present and future:
	// it is written to every board's ban record, and a board created later
	// gets it when created.
	PutGlobalBan(ctx context.Context, b Ban) (Ban, error)
	// LiftGlobalBan removes it from every board. ErrNoBan when there was none.
	LiftGlobalBan(ctx context.Context, member string) error
	// GlobalBans lists the live global bans, by member.
	GlobalBans(ctx context.Context) ([]Ban, error)
}

// CheckBan validates what a client chose of b (member, reason, until)
// against the store's clock now; the message names the field.
func CheckBan(b Ban, now time.Time) error {
	if !ValidMemberID(b.Member) {
		return ErrInvalidMember
	}
	if err := checkReason(b.Reason); err != nil {
		return fmt.Errorf("%w: field reason: %v", ErrInvalidBan, err)
	}
	if !b.Until.IsZero() && !b.Until.After(now) {
		return fmt.Errorf("%w: field until: %s is not in the future (the store's clock reads %s)",
			ErrInvalidBan, b.Until.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	return nil
}

func checkReason(r string) error {
	if !utf8.ValidString(r) {
		return errors.New("not valid UTF-8")
	}
	if n := utf8.RuneCountInString(r); n > MaxReasonChars {
		return fmt.Errorf("%d characters, at most %d", n, MaxReasonChars)
	}
	for _, c := range r {
		if unicode.IsControl(c) {
			return fmt.Errorf("control character %U", c)
		}
	}
	return nil
}

// ParseBan decodes a ban PUT body strictly: a JSON object with only the
// fields reason (a string) and until (an RFC 3339 time or null), each at
// most once. An empty body is a ban without reason or end. The member and
// the clock check are the caller's (CheckBan).
func ParseBan(body []byte) (Ban, error) {
	var b Ban
	if len(bytes.TrimSpace(body)) == 0 {
		return b, nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return Ban{}, fmt.Errorf("%w: want a JSON object", ErrInvalidBan)
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return Ban{}, fmt.Errorf("%w: %v", ErrInvalidBan, err)
		}
		key, _ := tok.(string)
		if key != "reason" && key != "until" {
			return Ban{}, fmt.Errorf("%w: field %s: unknown field", ErrInvalidBan, truncate(key, 32))
		}
		if seen[key] {
			return Ban{}, fmt.Errorf("%w: field %s: appears twice", ErrInvalidBan, key)
		}
		seen[key] = true
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return Ban{}, fmt.Errorf("%w: field %s: %v", ErrInvalidBan, key, err)
		}
		switch key {
		case "reason":
			if err := json.Unmarshal(raw, &b.Reason); err != nil {
				return Ban{}, fmt.Errorf("%w: field reason: want a string", ErrInvalidBan)
			}
			if err := checkReason(b.Reason); err != nil {
				return Ban{}, fmt.Errorf("%w: field reason: %v", ErrInvalidBan, err)
			}
		case "until":
			if string(raw) == "null" {
				continue
			}
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return Ban{}, fmt.Errorf("%w: field until: want an RFC 3339 time or null", ErrInvalidBan)
			}
			t, err := time.Parse(time.RFC3339, s)
			if err != nil {
				return Ban{}, fmt.Errorf("%w: field until: %q is not an RFC 3339 time", ErrInvalidBan, truncate(s, 40))
			}
			b.Until = t
		}
	}
	if _, err := dec.Token(); err != nil {
		return Ban{}, fmt.Errorf("%w: %v", ErrInvalidBan, err)
	}
	if dec.More() {
		return Ban{}, fmt.Errorf("%w: trailing data after the object", ErrInvalidBan)
	}
	if _, err := dec.Token(); err == nil {
		return Ban{}, fmt.Errorf("%w: trailing data after the object", ErrInvalidBan)
	}
	return b, nil
}

// banRecord is a Ban as engines store it (JSON, times in unix ms).
type banRecord struct {
	Reason string `json:"reason,omitempty"`
	Until  int64  `json:"until,omitempty"`
	At     int64  `json:"at"`
	By     string `json:"by,omitempty"`
}

// EncodeBan is b's stored form: "<until ms>;<JSON>" (0 = no end), so a Lua
// script reads the end without decoding JSON.
func EncodeBan(b Ban) string {
	r := banRecord{Reason: b.Reason, At: b.At.UnixMilli(), By: b.By}
	if !b.Until.IsZero() {
		r.Until = b.Until.UnixMilli()
	}
	j, _ := json.Marshal(r) // strings and ints only: never fails
	return fmt.Sprintf("%d;%s", r.Until, j)
}

// DecodeBan reads EncodeBan's form back for member.
func DecodeBan(member, s string) (Ban, error) {
	_, j, ok := bytes.Cut([]byte(s), []byte(";"))
	var r banRecord
	if !ok || json.Unmarshal(j, &r) != nil {
		return Ban{}, fmt.Errorf("rank: bad ban record %q", truncate(s, 64))
	}
	b := Ban{Member: member, Reason: r.Reason, At: time.UnixMilli(r.At).UTC(), By: r.By}
	if r.Until != 0 {
		b.Until = time.UnixMilli(r.Until).UTC()
	}
	return b, nil
}

// KeptPeriods lists the indexes of every period of board b that can hold
// entries at now: the current one, the one after (a boundary may pass
// meanwhile) and every retained past one, plus one more past one for a
// clock read a little late. A board without periods has only 0.
func KeptPeriods(b Board, now time.Time) []int64 {
	p := PeriodAt(b, now)
	if p.End.IsZero() {
		return []int64{p.Index}
	}
	out := []int64{PeriodAt(b, p.End).Index, p.Index}
	for range b.Retained() + 1 {
		p = p.Previous(b)
		out = append(out, p.Index)
	}
	return out
}
