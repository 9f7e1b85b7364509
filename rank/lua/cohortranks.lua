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
-- then per member what ranks.lua returns: found, rank, start, first_rank,
-- n, followed by n quadruples id, score, name, meta}, positions and ranks
-- within the member's cohort. A member is found when it has an entry in
-- the period (a banned member's is hidden: not found). Errors as ranks.lua's.

local err = refused()
if err then return err end
if banDue(KEYS[8]) then return redis.error_reply('LB expired') end

local slot = slotNow()
if not slot then return redis.error_reply('LB clock') end
local zkey, mkey, ekey, kkey = KEYS[4], KEYS[5], KEYS[9], KEYS[11]
if slot == 2 then zkey, mkey, ekey, kkey = KEYS[6], KEYS[7], KEYS[10], KEYS[12] end

local shared = ARGV[6] == 'shared'
local around = tonumber(ARGV[7])
local out = {slot, redis.call('ZCARD', zkey), tonumber(redis.call('GET', KEYS[2]) or '0')}
local found = {}
for a = 8, #ARGV do
  local member = ARGV[a]
  local z = redis.call('HGET', mkey, member) or member
  local c = false
  if redis.call('ZSCORE', zkey, z) then c = redis.call('HGET', kkey, member) end
  found[a] = c and {z = z, ck = kkey .. '/' .. c} or false
  out[#out + 1] = c or ''
end

for a = 8, #ARGV do
  local f = found[a]
  local pos = f and redis.call('ZREVRANK', f.ck, f.z)
  if not pos then
    for _ = 1, 5 do out[#out + 1] = 0 end
  else
    local ck = f.ck
    local start = pos - around
    if start < 0 then start = 0 end
    local r = redis.call('ZREVRANGE', ck, start, pos + around, 'WITHSCORES')
    local rank, first = pos + 1, start + 1
    if shared then
      rank = redis.call('ZCOUNT', ck, '(' .. redis.call('ZSCORE', ck, f.z), '+inf') + 1
      first = redis.call('ZCOUNT', ck, '(' .. r[2], '+inf') + 1
    end
    local ids, names = idsNames(r)
    local metas = metasOf(ekey, ids)
    out[#out + 1] = 1
    out[#out + 1] = rank
    out[#out + 1] = start
    out[#out + 1] = first
    out[#out + 1] = #ids
    for i = 1, #ids do
      out[#out + 1] = ids[i]
      out[#out + 1] = r[2 * i]
      out[#out + 1] = names[i]
      out[#out + 1] = metas[i]
    end
  end
end
return out
