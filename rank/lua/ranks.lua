-- ranks.lua: several members of one board period, each with its rank and
-- `around` neighbours, plus the period's size and the board's seq, read in
-- one snapshot.
--
-- KEYS[1] <p>:{b}:cfg    hash: v = config version
-- KEYS[2] <p>:{b}:seq    string: the board's change sequence
-- KEYS[3] <p>:{b}:n      hash: member id -> display name
-- KEYS[4] <p>:{b}:z:<A>  sorted set of period slot A
-- KEYS[5] <p>:{b}:m:<A>  hash: member id -> sorted-set member, slot A
-- KEYS[6] <p>:{b}:z:<B>  sorted set of period slot B (the period after A)
-- KEYS[7] <p>:{b}:m:<B>  hash of slot B
-- KEYS[8] <p>:{b}:ban    hash: the board's bans (see ban.lua)
-- KEYS[9] <p>:{b}:meta:<A> hash: member id -> meta (§11), slot A
-- KEYS[10] <p>:{b}:meta:<B> the same for B
-- KEYS[11] <p>:{b}:q:<A> sorted set of slot A's held entries
--          (apply_hold.lua), passed by a self read only (docs/protocol.md
--          §16): a listed member held there (and not banned) is read as it
--          sees itself, its entry put in the period's sorted set for its
--          own read only, so it and its neighbours rank as if it were
--          shown, and taken out again (the total counts the shown entries
--          only; the other listed members do not see it)
-- KEYS[12] <p>:{b}:q:<B> the same for B (a self read only)
--
-- ARGV[1]  config version the caller resolved the keys with
-- ARGV[2]  now in unix ms, or "" to read the server's TIME
-- ARGV[3]  start of slot A (unix ms)
-- ARGV[4]  boundary: end of A = start of B; 0 = no choice, always A
-- ARGV[5]  end of slot B
-- ARGV[6]  tiebreak: first | last | shared
-- ARGV[7]  around (>= 0)
-- ARGV[8…] member ids
--
-- Returns {slot, total, seq, then per member: found, rank, start, first_rank,
-- n, followed by n quadruples id, score, name, meta}: the member's window in rank
-- order, its own entry included; start is the 0-based position of the
-- window's first entry and first_rank its rank; scores as stored (negated on
-- asc boards); name and meta "" when none. found 0 means absent (all numbers 0).
-- With around 0 (member lists, docs/protocol.md §11), each member is only
-- its rank, 0 when absent, followed when present by its own entry's score,
-- name and meta: its id, position and window are known to the caller, and
-- a list of a thousand members would otherwise send five more values each.
-- Errors "LB <code>": unknown_board, stale, clock, expired (a ban's until
-- has passed: ban.lua lifts it and the caller reads again).

local err = refused()
if err then return err end
if banDue(KEYS[8]) then return redis.error_reply('LB expired') end

local slot = slotNow()
if not slot then return redis.error_reply('LB clock') end
local zkey, mkey, ekey = KEYS[4], KEYS[5], KEYS[9]
if slot == 2 then zkey, mkey, ekey = KEYS[6], KEYS[7], KEYS[10] end

local out = {slot, redis.call('ZCARD', zkey), tonumber(redis.call('GET', KEYS[2]) or '0')}

-- Every listed member's sorted-set member and score, one HMGET and one
-- ZMSCORE per 500 members. A window wider than the member carries its
-- score, so without shared ties ZREVRANK alone tells who has no entry.
local around, shared = tonumber(ARGV[7]), ARGV[6] == 'shared'
local ids = {}
for a = 8, #ARGV do ids[a - 7] = ARGV[a] end
local zs = hmgetList(mkey, ids)
local keys, scores = {}, {}
for i = 1, #ids do
  zs[i] = zs[i] or ids[i]
  keys[i] = zkey
  scores[i] = true
end
-- A self read's held members (their entries in q, not in the period's
-- sorted set), each with its stored score.
local held = false
if #KEYS == 12 then
  local q = KEYS[11]
  if slot == 2 then q = KEYS[12] end
  held = heldFor(q, KEYS[8], ids, zs)
end
if around == 0 or shared then
  for i = 1, #ids, 500 do
    local part = redis.call('ZMSCORE', zkey, unpack(zs, i, math.min(i + 499, #zs)))
    for j = 1, #part do scores[i + j - 1] = part[j] end
  end
end
if not held then return listRanks(out, keys, zs, ids, scores, around, shared, ekey) end
-- Each member read alone, a held one with its entry put in the period's
-- sorted set for its own read only and taken out again: a held member is
-- in no one else's read (§16), a listed one's included.
for i = 1, #ids do
  local sc, put = held[i], false
  if sc then
    put = redis.call('ZADD', zkey, 'NX', sc, zs[i]) == 1
    if put and scores[i] == false then scores[i] = sc end
  end
  out = listRanks(out, {zkey}, {zs[i]}, {ids[i]}, {scores[i]}, around, shared, ekey)
  if put then redis.call('ZREM', zkey, zs[i]) end
end
return out
