-- top.lua: one page of a board period, its size and the board's seq, read
-- in one snapshot.
--
-- KEYS[1] <p>:{b}:cfg    hash: v = config version
-- KEYS[2] <p>:{b}:seq    string: the board's change sequence
-- KEYS[3] <p>:{b}:n      hash: member id -> display name
-- KEYS[4] <p>:{b}:z:<A>  sorted set of period slot A
-- KEYS[5] <p>:{b}:z:<B>  sorted set of period slot B (the period after A)
-- KEYS[6] <p>:{b}:ban    hash: the board's bans (see ban.lua)
-- KEYS[7] <p>:{b}:meta:<A> hash: member id -> meta (§11), slot A
-- KEYS[8] <p>:{b}:meta:<B> the same for B
--
-- ARGV[1] config version the caller resolved the keys with
-- ARGV[2] now in unix ms, or "" to read the server's TIME
-- ARGV[3] start of slot A (unix ms)
-- ARGV[4] boundary: end of A = start of B; 0 = no choice, always A
-- ARGV[5] end of slot B
-- ARGV[6] tiebreak: first | last | shared
-- ARGV[7] offset (>= 0)
-- ARGV[8] limit (>= 0)
--
-- Returns {slot, total, seq, first_rank, id1, score1, name1, meta1, id2, ...}:
-- slot 1 = A, 2 = B; scores as stored (negated on asc boards); name "" when
-- none, meta "" when none. first_rank is the rank of the first entry. Errors "LB <code>":
-- unknown_board, stale, clock, expired (a ban's until has passed: ban.lua
-- lifts it and the caller reads again, so no read shows a member hidden
-- by a ban that has ended).

local err = refused()
if err then return err end
if banDue(KEYS[6]) then return redis.error_reply('LB expired') end

local slot = slotNow()
if not slot then return redis.error_reply('LB clock') end
local zkey, ekey = KEYS[4], KEYS[7]
if slot == 2 then zkey, ekey = KEYS[5], KEYS[8] end

local offset, limit = tonumber(ARGV[7]), tonumber(ARGV[8])
local out = {slot, redis.call('ZCARD', zkey), tonumber(redis.call('GET', KEYS[2]) or '0'), offset + 1}
if limit < 1 then return out end

local r = redis.call('ZREVRANGE', zkey, offset, offset + limit - 1, 'WITHSCORES')
if #r == 0 then return out end
if ARGV[6] == 'shared' then
  out[4] = redis.call('ZCOUNT', zkey, '(' .. r[2], '+inf') + 1
end
local ids, names = idsNames(r)
local metas = metasOf(ekey, ids)
for i = 1, #ids do
  out[#out + 1] = ids[i]
  out[#out + 1] = r[2 * i]
  out[#out + 1] = names[i]
  out[#out + 1] = metas[i]
end
return out
