package redisstore

// What a lane passes around: a call (one event from Apply to its done),
// a batch (one lane round's calls and scratch space) and a cmd (one
// EVALSHA of a pipeline).

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wsgateway/wsgateway/rank"
)

// batchBuffers is how many batches exist per lane: one being filled and
// sent, the others waiting for or in the completer.
const batchBuffers = 4

// call is one submitted event, from Apply to its done. The lane owns it
// until it hands its batch to the completer, which owns it from then on.
type call struct {
	ctx         context.Context
	deadline    time.Time // not sent after it
	e           rank.Event
	hash, token string // payload hash and attempt token: the two halves of rec
	rec         string // "<hash>.<token>", the record's first field (setRecord)
	seq         string // its board's seq key, from the config build used (syncTags)
	at          int64  // the event's at in unix ms, when it has one
	restoreAt   string // "r<ms>": an import into a past period (build), else ""
	fin         rank.Done
	shards      int // its board's shards, when sharded (lane.linger)

	// The outcome, set by the lane.
	r   rank.Result
	err error
	// unsynced: r is the event's applied result, but err is
	// rank.ErrUnavailable because the write was not confirmed on
	// Config.Replicas replicas (durable.go). The sink still hears of the
	// change, which did happen on the master; the caller hears unavailable.
	unsynced bool
	// found: the script found the event's record already written (a
	// duplicate, or this call's own write seen again after go-redis re-sent
	// the pipeline on a new connection), so the write may be on another
	// connection than the one whose WAIT answered (durable.go).
	found bool

	// On a sharded board (shard.go): the shard's keys, the board's config,
	// the sorted-set members apply.lua reported (new, old) and the bucket
	// hash it wrote the record in.
	shard            *applyKeys
	board            *cachedBoard
	newZ, oldZ, recH string
	// recTok is the attempt token of the record a shard's reply carried:
	// this call's own, or the first attempt's when it was a duplicate.
	recTok string
}

// batch is one lane round: the calls taken from the queue, in submission
// order, and the lane's scratch space for them.
type batch struct {
	calls   []*call
	changes []rank.Change
	// settled, when set by the lane (settleFirst), is closed by the
	// completer once every call's done has run.
	settled chan struct{}
	// finish is the completer's runDones(bt), bound once per buffer, so
	// Hooks.Complete costs no closure per batch.
	finish func()

	// The lane's scratch space (Store.work, Store.build).
	send    []*call        // calls still to send
	later   []*call        // calls of this round's full groups, for the next round (Store.build)
	memo    []boardMemo    // the configs of this round (Store.memoBoard)
	groupOf map[string]int // board -> group index (Store.build)
	cmds    []cmd          // the pipeline being built
	groups  []group        // the boards of send, in order of first appearance
	order   []int          // the group of each call of send; -1 = not sent
	next    []int          // per group, the next free place in grouped
	grouped []*call        // send's calls arranged by board, each board's in order
	// The round's id and minute, and the places given so far, when it
	// holds events of sharded boards (roundToken).
	round    string
	roundMin int64
	roundN   int
}

// newBatch is an empty batch for up to max calls.
func newBatch(max int) *batch {
	return &batch{calls: make([]*call, 0, max), groupOf: make(map[string]int)}
}

// cmd is one EVALSHA of a pipeline: the calls it applies (consecutive
// events of one board, in submission order), its keys and arguments.
type cmd struct {
	calls []*call
	keys  []string
	args  []any
	res   *redis.Cmd
	// sc is the script to run; nil = the lane's (apply.lua). Hot
	// boards' events go to hot.lua, whose scores have decimals.
	sc       *script
	decimals int
	// cfg is the config the command was built with (its group's, valid
	// for the lane round), for the times of a board_closed reason.
	cfg *rank.Board
	// unsynced is set when the pipeline's WAIT did not confirm its writes
	// on Config.Replicas replicas (durable.go); nil otherwise.
	unsynced error
}

// evalArgs is EVALSHA sha with keys and args as one argument list. Unlike
// EvalSha it refers to the keys instead of boxing each in an interface (a
// pointer boxes without allocating), and it builds one slice, not two:
// keys must not change until the pipeline is sent.
func evalArgs(sha string, keys []string, args []any) []any {
	out := make([]any, 0, 3+len(keys)+len(args))
	out = append(out, "evalsha", sha, len(keys))
	for i := range keys {
		out = append(out, &keys[i])
	}
	return append(out, args...)
}

// setRecord sets the call's payload hash and attempt token (prefix and
// number n) and their "<hash>.<token>" in one allocation: the three are
// substrings of one string.
func (c *call) setRecord(e rank.Event, prefix string, n uint64) {
	var buf [64]byte
	b := strconv.AppendUint(buf[:0], e.PayloadHash(), 36)
	h := len(b)
	b = append(b, '.')
	b = append(b, prefix...)
	b = strconv.AppendUint(b, n, 36)
	c.rec = string(b)
	c.hash, c.token = c.rec[:h], c.rec[h+1:]
}

// roundToken gives c, an event of a sharded board, the attempt token
// "<minute>:<round>:<place>" (base 36): the lane round's id, made unique
// per Store, and c's place among the round's sharded events. The record
// keeps it, so the seq step gives a round's events their board seqs with
// one hash field per round (shardseq.lua), and a duplicate met later, on
// any node, finds its own there. A call sent again in the same round (its
// first send was refused, so not applied) takes a new place. Lane only.
func (s *Store) roundToken(ctx context.Context, bt *batch, c *call) {
	if bt.round == "" {
		// The store clock's minute, as the script's expiry reads it.
		bt.roundMin = s.clock.now(ctx, s.client).Unix() / 60
		bt.round = s.attemptPrefix + strconv.FormatUint(s.rounds.Add(1), 36)
	}
	b := make([]byte, 0, len(c.hash)+len(bt.round)+16)
	b = append(b, c.hash...)
	b = append(b, '.')
	b = strconv.AppendInt(b, bt.roundMin, 36)
	b = append(b, ':')
	b = append(b, bt.round...)
	b = append(b, ':')
	b = strconv.AppendInt(b, int64(bt.roundN), 36)
	bt.roundN++
	c.rec = string(b)
	c.token = c.rec[len(c.hash)+1:]
}

// roundOf splits a token roundToken made into the round's minute, id and
// the event's place; ok is false for another token (an Apply's own,
// setRecord, as every record held before round tokens).
func roundOf(token string) (minute int64, round string, place int64, ok bool) {
	m, rest, ok1 := strings.Cut(token, ":")
	round, p, ok2 := strings.Cut(rest, ":")
	if !ok1 || !ok2 {
		return 0, "", 0, false
	}
	var err1, err2 error
	minute, err1 = strconv.ParseInt(m, 36, 64)
	place, err2 = strconv.ParseInt(p, 36, 64)
	return minute, round, place, err1 == nil && err2 == nil && round != ""
}

// appendArgs appends the call's seven apply.lua (and hot.lua) arguments:
// member, name, op, amount, "<hash>.<token>", at, request id. The strings and the
// numbers go as pointers into the call, which boxes without allocating;
// the call is not recycled before its pipeline's replies are read.
func (c *call) appendArgs(args []any) []any {
	var at any = ""
	switch {
	case c.restoreAt != "":
		at = &c.restoreAt
	case !c.e.At.IsZero():
		c.at = c.e.At.UnixMilli()
		at = &c.at
	}
	return append(args, &c.e.Member, &c.e.Name, int(c.e.Op), &c.e.Amount, &c.rec, at, &c.e.ID)
}
