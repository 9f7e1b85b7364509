package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wsgateway/wsgateway/rank"
)

// The outbox (rank.Outbox, R28) lives under one hash tag, so each of its
// scripts runs on one Cluster slot; webhook events are rare next to scores,
// so one slot carries them:
//
//	<p>:{wh}:hooks          hash: webhook id -> its JSON (secret included)
//	<p>:{wh}:q:<webhook>    sorted set: the webhook's pending delivery ids -> next attempt or lease end (ms)
//	<p>:{wh}:ready          sorted set: webhook id -> the earliest score of its q (only webhooks with one)
//	<p>:{wh}:due            sorted set: pending delivery id -> next attempt (the one queue of older
//	                        versions; the lease script moves what it holds to the q:<webhook>)
//	<p>:{wh}:d:<id>         hash: w (webhook), body (the static fields' JSON), status, attempts, err, next, created, token
//	<p>:{wh}:log:<webhook>  list: delivery ids, newest first, at most rank.DeliveryLog
//	<p>:{wh}:m:<hash>       string: the marker of a fact appended (AppendOutbox), named by its
//	                        rank.MarkerKey (a marker may name a member): when it lapses, ms
//
// A queue per webhook lets a lease pass over a slow receiver's webhook
// (its skip list) at the cost of one entry of ready, however many
// deliveries that webhook has due. A delivery that is delivered or failed
// expires deliveryKeep later; its id stays in the log until pushed out,
// and a listing skips what expired.

var _ rank.Outbox = (*Store)(nil)

const deliveryKeep = 7 * 24 * time.Hour

func (s *Store) whKey(parts ...string) string {
	k := s.cfg.Prefix + ":{wh}"
	for _, p := range parts {
		k += ":" + p
	}
	return k
}

// appendScript: KEYS[1] marker, KEYS[2] ready, then per delivery its
// hash, its webhook's log and its webhook's queue. ARGV[1] keep ms (0: for
// good), ARGV[2] now ms, ARGV[3] the static fields' JSON, then per delivery
// its webhook and id. The marker holds when it lapses on the store clock
// (0: never), which decides; its PX only frees the key.
var appendScript = redis.NewScript(`
local was = redis.call('GET', KEYS[1])
if was and (was == '0' or tonumber(was) > tonumber(ARGV[2])) then return 0 end
if tonumber(ARGV[1]) > 0 then
  redis.call('SET', KEYS[1], tonumber(ARGV[2]) + tonumber(ARGV[1]), 'PX', ARGV[1])
else
  redis.call('SET', KEYS[1], '0')
end
local n = 0
for i = 3, #KEYS, 3 do
  local w, id = ARGV[4 + n * 2], ARGV[5 + n * 2]
  redis.call('HSET', KEYS[i], 'w', w, 'body', ARGV[3], 'status', 'pending', 'attempts', 0,
    'err', '', 'next', ARGV[2], 'created', ARGV[2], 'token', '')
  redis.call('ZADD', KEYS[i + 2], ARGV[2], id)
  local first = redis.call('ZSCORE', KEYS[2], w)
  if not first or tonumber(first) > tonumber(ARGV[2]) then redis.call('ZADD', KEYS[2], ARGV[2], w) end
  redis.call('LPUSH', KEYS[i + 1], id)
  redis.call('LTRIM', KEYS[i + 1], 0, ` + strconv.Itoa(rank.DeliveryLog-1) + `)
  n = n + 1
end
return 1`)

// leaseScript: KEYS[1] ready, KEYS[2] hooks, KEYS[3] due (the older
// versions' one queue). ARGV[1] now ms, ARGV[2] lease end ms, ARGV[3]
// token, ARGV[4] the delivery keys' prefix ("<p>:{wh}:d:"), ARGV[5] the
// queues' prefix ("<p>:{wh}:q:"), ARGV[6…] the webhooks to pass over. The
// keys built from the two prefixes share KEYS[1]'s slot ({wh}). It returns
// the delivery's fields and its webhook's JSON, or nil when nothing is
// due. A webhook whose queue is due first and not passed over is taken
// from; a delivery whose webhook or hash is gone leaves its queue.
var leaseScript = redis.NewScript(`
local ready, hooks, dpre, qpre = KEYS[1], KEYS[2], ARGV[4], ARGV[5]
-- ready's entry of webhook w: its queue's earliest score, none when empty.
local function resync(w)
  local first = redis.call('ZRANGE', qpre .. w, 0, 0, 'WITHSCORES')
  if #first == 0 then redis.call('ZREM', ready, w) else redis.call('ZADD', ready, first[2], w) end
end
-- What an older version queued moves to the webhooks' queues, a bounded
-- number a call.
local old = redis.call('ZRANGE', KEYS[3], 0, 99, 'WITHSCORES')
for i = 1, #old, 2 do
  local w = redis.call('HGET', dpre .. old[i], 'w')
  if w then
    redis.call('ZADD', qpre .. w, old[i + 1], old[i])
    resync(w)
  end
  redis.call('ZREM', KEYS[3], old[i])
end
local skip = {}
for i = 6, #ARGV do skip[ARGV[i]] = true end
local budget = 64
for _, w in ipairs(redis.call('ZRANGEBYSCORE', ready, '-inf', ARGV[1])) do
  if not skip[w] then
    local hook = redis.call('HGET', hooks, w)
    while budget > 0 do
      budget = budget - 1
      local ids = redis.call('ZRANGEBYSCORE', qpre .. w, '-inf', ARGV[1], 'LIMIT', 0, 1)
      if #ids == 0 then break end
      local k = dpre .. ids[1]
      if hook and redis.call('EXISTS', k) == 1 then
        redis.call('ZADD', qpre .. w, ARGV[2], ids[1])
        redis.call('HSET', k, 'token', ARGV[3])
        resync(w)
        return {ids[1], hook, redis.call('HGETALL', k)}
      end
      redis.call('ZREM', qpre .. w, ids[1])
      redis.call('DEL', k)
    end
    resync(w)
    if budget <= 0 then return false end
  end
end
return false`)

// recordScript: KEYS[1] the webhook's queue, KEYS[2] the delivery, KEYS[3]
// ready. ARGV[1] id, ARGV[2] token, ARGV[3] status, ARGV[4] attempts,
// ARGV[5] err, ARGV[6] next ms (0 when final), ARGV[7] keep ms once final,
// ARGV[8] the webhook. 0 when the token no longer holds the lease.
var recordScript = redis.NewScript(`
if redis.call('HGET', KEYS[2], 'token') ~= ARGV[2] or redis.call('HGET', KEYS[2], 'status') ~= 'pending' then
  return 0
end
redis.call('HSET', KEYS[2], 'status', ARGV[3], 'attempts', ARGV[4], 'err', ARGV[5], 'next', ARGV[6], 'token', '')
if ARGV[3] == 'pending' then
  redis.call('ZADD', KEYS[1], ARGV[6], ARGV[1])
else
  redis.call('ZREM', KEYS[1], ARGV[1])
  redis.call('PEXPIRE', KEYS[2], ARGV[7])
end
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if #first == 0 then redis.call('ZREM', KEYS[3], ARGV[8]) else redis.call('ZADD', KEYS[3], first[2], ARGV[8]) end
return 1`)

// deliveryBody is the part of a delivery fixed when it is appended.
type deliveryBody struct {
	Event string          `json:"event"`
	Board string          `json:"board"`
	TS    int64           `json:"ts"`
	Data  json.RawMessage `json:"data"`
}

func (s *Store) PutWebhook(ctx context.Context, w rank.Webhook) (rank.Webhook, error) {
	if err := w.Validate(); err != nil {
		return rank.Webhook{}, fmt.Errorf("redisstore: put webhook: %w", err)
	}
	if s.closed.Load() {
		return rank.Webhook{}, ErrClosed
	}
	b, err := json.Marshal(w)
	if err != nil {
		return rank.Webhook{}, fmt.Errorf("redisstore: put webhook %s: %w", w.ID, err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	if err := s.client.HSet(ctx, s.whKey("hooks"), w.ID, b).Err(); err != nil {
		return rank.Webhook{}, s.fail("put webhook", "", err)
	}
	return w, nil
}

func (s *Store) GetWebhook(ctx context.Context, id string) (rank.Webhook, error) {
	if s.closed.Load() {
		return rank.Webhook{}, ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	v, err := s.client.HGet(ctx, s.whKey("hooks"), id).Result()
	if errors.Is(err, redis.Nil) {
		return rank.Webhook{}, fmt.Errorf("redisstore: webhook %s: %w", id, rank.ErrNoWebhook)
	}
	if err != nil {
		return rank.Webhook{}, s.fail("get webhook", "", err)
	}
	var w rank.Webhook
	if err := json.Unmarshal([]byte(v), &w); err != nil {
		return rank.Webhook{}, fmt.Errorf("redisstore: webhook %s: %w", id, err)
	}
	return w, nil
}

func (s *Store) Webhooks(ctx context.Context) ([]rank.Webhook, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	all, err := s.client.HGetAll(ctx, s.whKey("hooks")).Result()
	if err != nil {
		return nil, s.fail("webhooks", "", err)
	}
	out := make([]rank.Webhook, 0, len(all))
	for id, v := range all {
		var w rank.Webhook
		if err := json.Unmarshal([]byte(v), &w); err != nil {
			return nil, fmt.Errorf("redisstore: webhook %s: %w", id, err)
		}
		out = append(out, w)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// DeleteWebhook removes the webhook, its log and the deliveries the log
// names; a pending delivery already pushed out of the log leaves the queue
// when next leased (leaseScript).
func (s *Store) DeleteWebhook(ctx context.Context, id string) error {
	if s.closed.Load() {
		return ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	n, err := s.client.HDel(ctx, s.whKey("hooks"), id).Result()
	if err != nil {
		return s.fail("delete webhook", "", err)
	}
	if n == 0 {
		return fmt.Errorf("redisstore: delete webhook %s: %w", id, rank.ErrNoWebhook)
	}
	log, q := s.whKey("log", id), s.whKey("q", id)
	ids, err := s.client.LRange(ctx, log, 0, -1).Result()
	if err != nil {
		return s.fail("delete webhook", "", err)
	}
	queued, err := s.client.ZRange(ctx, q, 0, -1).Result()
	if err != nil {
		return s.fail("delete webhook", "", err)
	}
	_, err = s.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for _, d := range append(ids, queued...) {
			p.Del(ctx, s.whKey("d", d))
			p.ZRem(ctx, s.whKey("due"), d)
		}
		p.Del(ctx, log, q)
		p.ZRem(ctx, s.whKey("ready"), id)
		return nil
	})
	if err != nil {
		return s.fail("delete webhook", "", err)
	}
	return nil
}

func (s *Store) AppendOutbox(ctx context.Context, marker string, keep time.Duration, ev rank.OutboxEvent) (bool, error) {
	hooks, err := s.Webhooks(ctx)
	if err != nil {
		return false, err
	}
	body, err := json.Marshal(deliveryBody{Event: ev.Event, Board: ev.Board, TS: ev.TS.UnixMilli(), Data: ev.Data})
	if err != nil {
		return false, fmt.Errorf("redisstore: append outbox: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	now := s.clock.now(ctx, s.client)
	keys := []string{s.whKey("m", rank.MarkerKey(marker)), s.whKey("ready")}
	args := []any{keep.Milliseconds(), now.UnixMilli(), body}
	for _, w := range hooks {
		if !w.Wants(ev.Event, ev.Board) {
			continue
		}
		id := newDeliveryID()
		keys = append(keys, s.whKey("d", id), s.whKey("log", w.ID), s.whKey("q", w.ID))
		args = append(args, w.ID, id)
	}
	v, err := appendScript.Run(ctx, s.client, keys, args...).Int()
	if err != nil {
		return false, s.fail("append outbox", ev.Board, err)
	}
	return v == 1, nil
}

func (s *Store) LeaseDelivery(ctx context.Context, token string, lease time.Duration, skip ...string) (rank.Delivery, rank.Webhook, bool, error) {
	if s.closed.Load() {
		return rank.Delivery{}, rank.Webhook{}, false, ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	now := s.clock.now(ctx, s.client)
	args := []any{now.UnixMilli(), now.Add(lease).UnixMilli(), token, s.whKey("d") + ":", s.whKey("q") + ":"}
	for _, w := range skip {
		args = append(args, w)
	}
	v, err := leaseScript.Run(ctx, s.client, []string{s.whKey("ready"), s.whKey("hooks"), s.whKey("due")}, args...).Slice()
	if errors.Is(err, redis.Nil) {
		return rank.Delivery{}, rank.Webhook{}, false, nil
	}
	if err != nil {
		return rank.Delivery{}, rank.Webhook{}, false, s.fail("lease delivery", "", err)
	}
	if len(v) != 3 {
		return rank.Delivery{}, rank.Webhook{}, false, fmt.Errorf("redisstore: lease delivery: a reply of %d parts, want 3", len(v))
	}
	id, _ := v[0].(string)
	hookJSON, _ := v[1].(string)
	var w rank.Webhook
	if err := json.Unmarshal([]byte(hookJSON), &w); err != nil {
		return rank.Delivery{}, rank.Webhook{}, false, fmt.Errorf("redisstore: lease delivery %s: %w", id, err)
	}
	fields, _ := v[2].([]any)
	h := map[string]string{}
	for i := 0; i+1 < len(fields); i += 2 {
		k, _ := fields[i].(string)
		val, _ := fields[i+1].(string)
		h[k] = val
	}
	d, err := deliveryOf(id, h)
	if err != nil {
		return rank.Delivery{}, rank.Webhook{}, false, err
	}
	return d, w, true, nil
}

func (s *Store) RecordAttempt(ctx context.Context, id, token, errText string) (bool, error) {
	if s.closed.Load() {
		return false, ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	key := s.whKey("d", id)
	h, err := s.client.HGetAll(ctx, key).Result()
	if err != nil {
		return false, s.fail("record attempt", "", err)
	}
	if h["token"] != token || h["status"] != rank.DeliveryPending {
		return false, nil // the lease ended and another node holds it
	}
	d, err := deliveryOf(id, h)
	if err != nil {
		return false, err
	}
	now := s.clock.now(ctx, s.client)
	attempts := d.Attempts + 1
	status, next := rank.DeliveryDelivered, int64(0)
	if errText != "" {
		if t, ok := rank.NextAttempt(d.Created, attempts, now); ok {
			status, next = rank.DeliveryPending, t.UnixMilli()
		} else {
			status = rank.DeliveryFailed
		}
	}
	v, err := recordScript.Run(ctx, s.client, []string{s.whKey("q", d.Webhook), key, s.whKey("ready")},
		id, token, status, attempts, errText, next, deliveryKeep.Milliseconds(), d.Webhook).Int()
	if err != nil {
		return false, s.fail("record attempt", "", err)
	}
	return v == 1, nil
}

func (s *Store) Deliveries(ctx context.Context, webhook string) ([]rank.Delivery, error) {
	if _, err := s.GetWebhook(ctx, webhook); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	ids, err := s.client.LRange(ctx, s.whKey("log", webhook), 0, rank.DeliveryLog-1).Result()
	if err != nil {
		return nil, s.fail("deliveries", "", err)
	}
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	_, err = s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.HGetAll(ctx, s.whKey("d", id))
		}
		return nil
	})
	if err != nil {
		return nil, s.fail("deliveries", "", err)
	}
	out := make([]rank.Delivery, 0, len(ids))
	for i, id := range ids {
		h := cmds[i].Val()
		if len(h) == 0 {
			continue // expired after it ended
		}
		d, err := deliveryOf(id, h)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// deliveryOf reads a delivery's hash.
func deliveryOf(id string, h map[string]string) (rank.Delivery, error) {
	var b deliveryBody
	if err := json.Unmarshal([]byte(h["body"]), &b); err != nil {
		return rank.Delivery{}, fmt.Errorf("redisstore: delivery %s: %w", id, err)
	}
	ms := func(k string) time.Time {
		v, _ := strconv.ParseInt(h[k], 10, 64)
		if v == 0 {
			return time.Time{}
		}
		return time.UnixMilli(v)
	}
	attempts, _ := strconv.Atoi(h["attempts"])
	return rank.Delivery{
		ID: id, Webhook: h["w"], Event: b.Event, Board: b.Board, TS: time.UnixMilli(b.TS), Data: b.Data,
		Created: ms("created"), Status: h["status"], Attempts: attempts, LastError: h["err"], NextAttemptAt: ms("next"),
	}, nil
}

// newDeliveryID is a random id: receivers dedupe by it (R28), so it must
// not repeat across nodes or restarts.
func newDeliveryID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}
