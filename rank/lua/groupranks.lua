-- groupranks.lua: several members of one period of a board whose entries
-- are also ranked in groups, cohorts (§12) or regions (§17), each with its
-- group, read in one snapshot with the period's size and the board's seq.
-- Scope "group": each member's rank and `around` neighbours within its own
-- group (a cohort board's member reads, a region view). Scope "board": its
-- rank and neighbours on the whole board, and its rank within its group (a
-- region board's member reads).
--
-- KEYS[1]  <p>:{b}:cfg    hash: v = config version
-- KEYS[2]  <p>:{b}:seq    string: the board's change sequence
-- KEYS[3]  <p>:{b}:n      hash: member id -> display name
-- KEYS[4]  <p>:{b}:z:<A>  sorted set of period slot A
-- KEYS[5]  <p>:{b}:m:<A>  hash: member id -> sorted-set member, slot A
-- KEYS[6]  <p>:{b}:z:<B>  sorted set of period slot B (the period after A)
-- KEYS[7]  <p>:{b}:m:<B>  hash of slot B
-- KEYS[8]  <p>:{b}:ban    hash: the board's bans (see ban.lua)
-- KEYS[9]  <p>:{b}:meta:<A> hash: member id -> meta (§11), slot A
-- KEYS[10] <p>:{b}:meta:<B> the same for B
-- KEYS[11] the groups' hash of slot A, member id -> its group: a cohort
--          board's <p>:{b}:k:<A> ("<tier>.<n>"), a region board's
--          <p>:{b}:g:<A> (the region); the group's sorted set is this name
--          .. "/<group>", holding the board's own entries (apply.lua)
-- KEYS[12] the same for B
-- KEYS[13] <p>:{b}:q:<A> sorted set of slot A's held entries
--          (apply_hold.lua), passed by a self read in scope board only
--          (docs/protocol.md §16, as ranks.lua's KEYS[11]): a listed member
--          held there (and not banned) is read as it sees itself, its
--          entry put in the period's sorted set and its group's for its
--          own read only and taken out again (the total counts the shown
--          entries only; the other listed members do not see it)
-- KEYS[14] <p>:{b}:q:<B> the same for B (a self read only)
--
-- ARGV[1]  config version the caller resolved the keys with
-- ARGV[2]  now in unix ms, or "" to read the server's TIME
-- ARGV[3]  start of slot A (unix ms)
-- ARGV[4]  boundary: end of A = start of B; 0 = no choice, always A
-- ARGV[5]  end of slot B
-- ARGV[6]  tiebreak: first | last | shared
-- ARGV[7]  around (>= 0)
-- ARGV[8]  scope: group | board
-- ARGV[9…] member ids
--
-- Returns {slot, total, seq, then each member's group ("" when absent),
-- in scope board then each member's rank in its group (0 when absent),
-- then per member what ranks.lua returns (with around 0 its shorter form):
-- found, rank, start, first_rank, n, followed by n quadruples id, score,
-- name, meta}, positions and ranks within the member's group in scope
-- group, on the board in scope board. A member is found when it has an
-- entry in the period (a banned member's is hidden: not found). Errors as
-- ranks.lua's.

local err = refused()
if err then return err end
if banDue(KEYS[8]) then return redis.error_reply('LB expired') end

local slot = slotNow()
if not slot then return redis.error_reply('LB clock') end
local zkey, mkey, ekey, gkey = KEYS[4], KEYS[5], KEYS[9], KEYS[11]
if slot == 2 then zkey, mkey, ekey, gkey = KEYS[6], KEYS[7], KEYS[10], KEYS[12] end
local shared, inGroup = ARGV[6] == 'shared', ARGV[8] == 'group'

local out = {slot, redis.call('ZCARD', zkey), tonumber(redis.call('GET', KEYS[2]) or '0')}

-- Every listed member's sorted-set member, score and group, one HMGET or
-- ZMSCORE per hash per 500 members; its group's set holds the same entry
-- with the same score.
local ids = {}
for a = 9, #ARGV do ids[a - 8] = ARGV[a] end
local zs = hmgetList(mkey, ids)
for i = 1, #ids do zs[i] = zs[i] or ids[i] end
local gs = hmgetList(gkey, ids)
-- A self read's held members (their entries in q, not in the period's
-- sorted set), each with its stored score.
local held = false
if #KEYS == 14 and not inGroup then
  local q = KEYS[13]
  if slot == 2 then q = KEYS[14] end
  held = heldFor(q, KEYS[8], ids, zs)
end
local keys, scores, sets, grs = {}, {}, {}, {}
-- puts[k]: listed member k is held and read as it sees itself (its entry
-- put in for its own read only, below).
local puts = {}
for i = 1, #ids, 500 do
  local part = redis.call('ZMSCORE', zkey, unpack(zs, i, math.min(i + 499, #zs)))
  for j = 1, #part do
    local k = i + j - 1
    local sc = part[j]
    if not sc and held and held[k] then
      sc = held[k]
      puts[k] = true
    end
    local g = sc and gs[k]
    out[#out + 1] = g or ''
    scores[k], keys[k] = sc, zkey
    if g then
      sets[g] = sets[g] or gkey .. '/' .. g
      if inGroup then keys[k] = sets[g] end
    elseif inGroup then
      scores[k] = false
    end
    if not inGroup then
      local r = 0
      if g then
        if shared then
          r = redis.call('ZCOUNT', sets[g], '(' .. sc, '+inf') + 1
        else
          local put = puts[k] and redis.call('ZADD', sets[g], 'NX', sc, zs[k]) == 1
          r = (redis.call('ZREVRANK', sets[g], zs[k]) or -1) + 1
          if put then redis.call('ZREM', sets[g], zs[k]) end
        end
      end
      grs[k] = r
    end
  end
end
for k = 1, #grs do out[#out + 1] = grs[k] end
if not held then return listRanks(out, keys, zs, ids, scores, tonumber(ARGV[7]), shared, ekey) end
-- Each member read alone, a held one with its entry put in the period's
-- sorted set for its own read only and taken out again: a held member is
-- in no one else's read (§16), a listed one's included.
for i = 1, #ids do
  local put = puts[i] and redis.call('ZADD', zkey, 'NX', scores[i], zs[i]) == 1
  out = listRanks(out, {keys[i]}, {zs[i]}, {ids[i]}, {scores[i]}, tonumber(ARGV[7]), shared, ekey)
  if put then redis.call('ZREM', zkey, zs[i]) end
end
return out
