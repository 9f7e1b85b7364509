-- cohortranks.lua: several members of one period of a cohort board (§12),
-- each with its rank and `around` neighbours within its own cohort, plus
-- the period's size and the board's seq, read in one snapshot.
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
-- KEYS[11] <p>:{b}:k:<A>  hash: member id -> its cohort "<tier>.<n>", slot A;
--          the cohort's sorted set is this name .. "/<tier>.<n>" (apply.lua)
-- KEYS[12] <p>:{b}:k:<B>  the same for B
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
-- Returns {slot, total, seq, then each member's cohort ("" when absent),
-- then per member what ranks.lua returns (with around 0 its shorter form):
-- found, rank, start, first_rank, n, followed by n quadruples id, score,
-- name, meta}, positions and ranks within the member's cohort. A member is
-- found when it has an entry in the period (a banned member's is hidden:
-- not found). Errors as ranks.lua's.

local err = refused()
if err then return err end
if banDue(KEYS[8]) then return redis.error_reply('LB expired') end

local slot = slotNow()
if not slot then return redis.error_reply('LB clock') end
local zkey, mkey, ekey, kkey = KEYS[4], KEYS[5], KEYS[9], KEYS[11]
if slot == 2 then zkey, mkey, ekey, kkey = KEYS[6], KEYS[7], KEYS[10], KEYS[12] end

local out = {slot, redis.call('ZCARD', zkey), tonumber(redis.call('GET', KEYS[2]) or '0')}

-- Every listed member's sorted-set member, score and cohort, one HMGET or
-- ZMSCORE per hash per 500 members; its cohort's set holds the same entry
-- with the same score.
local ids = {}
for a = 8, #ARGV do ids[a - 7] = ARGV[a] end
local zs = hmgetList(mkey, ids)
for i = 1, #ids do zs[i] = zs[i] or ids[i] end
local cs = hmgetList(kkey, ids)
local keys, scores, sets = {}, {}, {}
for i = 1, #ids, 500 do
  local part = redis.call('ZMSCORE', zkey, unpack(zs, i, math.min(i + 499, #zs)))
  for j = 1, #part do
    local k = i + j - 1
    local c = part[j] and cs[k]
    out[#out + 1] = c or ''
    if c then
      sets[c] = sets[c] or kkey .. '/' .. c
      keys[k], scores[k] = sets[c], part[j]
    else
      scores[k] = false
    end
  end
end
return listRanks(out, keys, zs, ids, scores, tonumber(ARGV[7]), ARGV[6] == 'shared', ekey)
