package rank

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"time"
)

// Webhook events (docs/protocol.md §13).
const (
	EventPeriodFinal  = "period.final"
	EventBoardFinal   = "board.final"
	EventBoardState   = "board.state"
	EventMemberBanned = "member.banned"
	EventMemberErased = "member.erased"
	EventMemberHeld   = "member.held" // §16
)

// webhookEvents are the events a webhook may ask for.
var webhookEvents = []string{EventPeriodFinal, EventBoardFinal, EventBoardState, EventMemberBanned, EventMemberErased, EventMemberHeld}

// Limits of a webhook and of its outbox.
const (
	MinSecretBytes = 16
	MaxSecretBytes = 256
	MaxURLBytes    = 2048
	MaxWebhookIDs  = 1000 // boards one webhook may name
	// DeliveryLog is how many deliveries of a webhook are listed (§13).
	DeliveryLog = 100
	// RetryFirst, RetryMax and RetryFor are R28's schedule: the first retry
	// within 5 s, gaps doubling up to 1 h, for 24 h.
	RetryFirst = 5 * time.Second
	RetryMax   = time.Hour
	RetryFor   = 24 * time.Hour
)

// Delivery statuses (§13).
const (
	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryFailed    = "failed"
)

// ErrInvalidWebhook is a webhook body that fails validation; the wrapping
// message names the field.
var ErrInvalidWebhook = &Error{"bad_request", "invalid webhook"}

// ErrNoWebhook is a read or delete of a webhook that does not exist.
var ErrNoWebhook = errors.New("rank: no such webhook")

// Webhook is an outbound callback an admin registers (§13). Secret signs
// each delivery and is never shown again after it is stored.
type Webhook struct {
	ID     string   `json:"id"`
	URL    string   `json:"url"`
	Secret string   `json:"secret,omitempty"`
	Events []string `json:"events"`
	// Boards limits the webhook to these boards; nil = every board.
	Boards []string `json:"boards,omitempty"`
}

// Public is w as the API shows it: without its secret.
func (w Webhook) Public() Webhook {
	w.Secret = ""
	return w
}

// Wants reports whether w hears of event on board.
func (w Webhook) Wants(event, board string) bool {
	return slices.Contains(w.Events, event) && (w.Boards == nil || slices.Contains(w.Boards, board))
}

var webhookFields = map[string]bool{"id": true, "url": true, "secret": true, "events": true, "boards": true}

// ParseWebhook decodes a webhook body strictly (unknown or repeated fields
// are errors); id is the one in the path, which a body's id must match.
// The result is validated.
func ParseWebhook(id string, body []byte) (Webhook, error) {
	if _, err := strictKeys(body, func(k string) bool { return webhookFields[k] }); err != nil {
		return Webhook{}, fmt.Errorf("%w: %v", ErrInvalidWebhook, err)
	}
	w := Webhook{ID: id}
	if err := json.Unmarshal(body, &w); err != nil {
		return Webhook{}, fmt.Errorf("%w: %v", ErrInvalidWebhook, jsonErrorText(err))
	}
	if w.ID != id {
		return Webhook{}, fmt.Errorf("%w: field id: %q does not match the webhook in the path %q", ErrInvalidWebhook, w.ID, id)
	}
	return w, w.Validate()
}

// Validate checks every field and names the first bad one. Whether the
// URL's host is a private address is the caller's check (package webhook):
// it needs the resolver and the gateway's flag.
func (w Webhook) Validate() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: field %s: %s", ErrInvalidWebhook, field, fmt.Sprintf(format, args...))
	}
	if !ValidBoardID(w.ID) {
		return bad("id", "%q must match [A-Za-z0-9_.-]{1,64}", clipID(w.ID))
	}
	if len(w.URL) > MaxURLBytes {
		return bad("url", "longer than %d bytes", MaxURLBytes)
	}
	u, err := url.Parse(w.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return bad("url", "%q is not an http(s) URL with a host and no user info", w.URL)
	}
	if len(w.Secret) < MinSecretBytes || len(w.Secret) > MaxSecretBytes {
		return bad("secret", "must be %d..%d bytes", MinSecretBytes, MaxSecretBytes)
	}
	if len(w.Events) == 0 {
		return bad("events", "name at least one of %v", webhookEvents)
	}
	for _, e := range w.Events {
		if !slices.Contains(webhookEvents, e) {
			return bad("events", "%q is not one of %v", e, webhookEvents)
		}
	}
	if w.Boards != nil && (len(w.Boards) == 0 || len(w.Boards) > MaxWebhookIDs) {
		return bad("boards", "name 1..%d boards, or leave it out for every board", MaxWebhookIDs)
	}
	for _, b := range w.Boards {
		if !ValidBoardID(b) {
			return bad("boards", "%q must match [A-Za-z0-9_.-]{1,64}", clipID(b))
		}
	}
	return nil
}

// MarkerKey is what an engine keeps of an outbox marker (AppendOutbox): a
// hash of it. A marker may name a member (a ban's names its board, member
// and time), and after an erasure no key of the store may hold the
// member's id (R29); the hash still tells one marker from another.
func MarkerKey(marker string) string {
	h := sha256.Sum256([]byte(marker))
	return hex.EncodeToString(h[:16])
}

// OutboxEvent is a fact to tell the webhooks that want it.
type OutboxEvent struct {
	Event string
	Board string
	TS    time.Time       // when the fact happened, on the store's clock
	Data  json.RawMessage // the delivery's "data"
}

// Delivery is one event on its way to one webhook (§13).
type Delivery struct {
	ID      string
	Webhook string
	Event   string
	Board   string
	TS      time.Time
	Data    json.RawMessage
	// Created is when the outbox got it: the 24 h of R28 count from here.
	Created       time.Time
	Status        string // DeliveryPending, DeliveryDelivered or DeliveryFailed
	Attempts      int
	LastError     string
	NextAttemptAt time.Time // zero once delivered or failed
}

// NextAttempt is when a delivery created at created, after its attempts-th
// failed attempt at now, is tried again, or false when R28's 24 h are over
// (the delivery then fails).
func NextAttempt(created time.Time, attempts int, now time.Time) (time.Time, bool) {
	gap := RetryFirst
	for i := 1; i < attempts && gap < RetryMax; i++ {
		gap *= 2
	}
	gap = min(gap, RetryMax)
	next := now.Add(gap)
	if !next.Before(created.Add(RetryFor)) {
		return time.Time{}, false
	}
	return next, true
}

// Outbox is an engine's webhook registry and delivery queue (R28): it lives
// in the store, so it outlives any node. Ids are validated (ErrInvalidWebhook).
type Outbox interface {
	// PutWebhook creates or replaces a webhook (validated) and returns it
	// as stored.
	PutWebhook(ctx context.Context, w Webhook) (Webhook, error)
	// GetWebhook returns ErrNoWebhook when there is none.
	GetWebhook(ctx context.Context, id string) (Webhook, error)
	// Webhooks lists every webhook, sorted by id.
	Webhooks(ctx context.Context) ([]Webhook, error)
	// DeleteWebhook removes it and its pending deliveries; ErrNoWebhook
	// when there was none.
	DeleteWebhook(ctx context.Context, id string) error

	// AppendOutbox records ev for every webhook that wants it, in one
	// atomic step with marker: the first call with a marker appends, every
	// later one (any node) appends nothing and returns false. The marker
	// is kept for keep (0 = for good), as its MarkerKey only.
	AppendOutbox(ctx context.Context, marker string, keep time.Duration, ev OutboxEvent) (bool, error)
	// LeaseDelivery takes the pending delivery due first (next attempt at
	// or before the store's clock) for lease: until it ends no other call
	// gets it, so one node makes an attempt at a time, and when it ends
	// without RecordAttempt (the node died) the delivery is due again.
	// token names the taker. A webhook named in skip (the caller has no
	// slot free for it: a slow receiver) is passed over, however early its
	// deliveries are due, and costs the call nothing per delivery it has
	// queued. false when nothing is due.
	LeaseDelivery(ctx context.Context, token string, lease time.Duration, skip ...string) (Delivery, Webhook, bool, error)
	// RecordAttempt records the outcome of the leased attempt: errText ""
	// is a 2xx (delivered), else the next attempt is scheduled by
	// NextAttempt or the delivery fails. A token that no longer holds the
	// lease records nothing and returns false.
	RecordAttempt(ctx context.Context, id, token, errText string) (bool, error)
	// Deliveries lists the webhook's last DeliveryLog deliveries, newest
	// first.
	Deliveries(ctx context.Context, webhook string) ([]Delivery, error)
}

// Limits of the final events' board config (§13).
const (
	DefaultStandings = 100
	MaxStandings     = 1000
	MaxRewards       = 16 // ranges in one config
	MaxRewardChars   = 128
)

// Reward names what the members ranked From..To (inclusive) get when a
// period or board becomes final.
type Reward struct {
	From   int64  `json:"from"`
	To     int64  `json:"to"`
	Reward string `json:"reward"`
}

// Rewards is a board's reward ranges, held in an array so that Board
// stays a comparable value (as Tiers). Its JSON is a list.
type Rewards struct {
	n    int
	list [MaxRewards]Reward
}

// RewardsOf makes a Rewards of rs; past MaxRewards it keeps the first
// MaxRewards and reports false.
func RewardsOf(rs ...Reward) (Rewards, bool) {
	var r Rewards
	r.n = copy(r.list[:], rs)
	return r, len(rs) <= MaxRewards
}

// All is the ranges in the order configured.
func (r Rewards) All() []Reward { return r.list[:r.n] }

// MarshalJSON writes the ranges as a JSON list.
func (r Rewards) MarshalJSON() ([]byte, error) { return json.Marshal(r.All()) }

// UnmarshalJSON reads a JSON list of ranges, each strictly.
func (r *Rewards) UnmarshalJSON(b []byte) error {
	var rs []Reward
	if err := json.Unmarshal(b, &rs); err != nil {
		return fmt.Errorf("field rewards: %v", err)
	}
	v, ok := RewardsOf(rs...)
	if !ok {
		return fmt.Errorf("field rewards: %d ranges, at most %d", len(rs), MaxRewards)
	}
	*r = v
	return nil
}

// UnmarshalJSON reads a range strictly, as board configs are read.
func (r *Reward) UnmarshalJSON(b []byte) error {
	if _, err := strictKeys(b, func(k string) bool { return k == "from" || k == "to" || k == "reward" }); err != nil {
		return fmt.Errorf("reward: %v (want from, to and reward)", err)
	}
	type plain Reward // no UnmarshalJSON: no recursion
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*r = Reward(p)
	return nil
}

// StandingsCount is how many entries b's final events carry.
func (b Board) StandingsCount() int {
	if b.Standings == 0 {
		return DefaultStandings
	}
	return b.Standings
}

// validateRewards checks each range and that no two overlap; rewards are
// read from the final standings, so no range goes past MaxStandings.
func validateRewards(rewards Rewards) error {
	rs := rewards.All()
	for i, r := range rs {
		switch {
		case r.From < 1 || r.To < r.From || r.To > MaxStandings:
			return fmt.Errorf("range %d: from %d to %d is not 1 <= from <= to <= %d", i, r.From, r.To, MaxStandings)
		case r.Reward == "" || len([]rune(r.Reward)) > MaxRewardChars:
			return fmt.Errorf("range %d: reward must be 1..%d characters", i, MaxRewardChars)
		}
		for j, o := range rs[:i] {
			if r.From <= o.To && o.From <= r.To {
				return fmt.Errorf("ranges %d and %d overlap", j, i)
			}
		}
	}
	return nil
}

// RewardFor is the reward of rank, "" for none.
func (b Board) RewardFor(rank int64) string {
	for _, r := range b.Rewards.All() {
		if r.From <= rank && rank <= r.To {
			return r.Reward
		}
	}
	return ""
}

// FinalReach is how many entries a final event reads: its standings and
// every rank a reward names.
func (b Board) FinalReach() int {
	n := int64(b.StandingsCount())
	for _, r := range b.Rewards.All() {
		n = max(n, r.To)
	}
	return int(n)
}
