-- regions.lua: the regions of one period of a region board (§17) that hold
-- entries, each with its entry count.
--
-- KEYS[1] <p>:{b}:cfg      hash: v = config version
-- KEYS[2] <p>:{b}:seq      as top.lua's; not read here
-- KEYS[3] <p>:{b}:n        the prelude's names; not read here
-- KEYS[4] <p>:{b}:g:<A>/r  set: every region a member was placed in, slot A
--         (apply.lua); region R's sorted set is <p>:{b}:g:<A>/R, built here
--         from this name (same hash tag)
-- KEYS[5] <p>:{b}:g:<B>/r  the same for slot B
--
-- ARGV[1] config version the caller resolved the keys with
-- ARGV[2] now in unix ms, or "" to read the server's TIME
-- ARGV[3] start of slot A (unix ms)
-- ARGV[4] boundary: end of A = start of B; 0 = no choice, always A
-- ARGV[5] end of slot B
--
-- Returns {slot, region1, count1, region2, count2, ...}: slot 1 = A, 2 = B;
-- regions whose sets are empty (every member moved away, banned, removed)
-- are left out. At most 250 regions (ISO 3166-1 alpha-2 and ZZ), one ZCARD
-- each. Errors "LB <code>": unknown_board, stale, clock.

local err = refused()
if err then return err end
local slot = slotNow()
if not slot then return redis.error_reply('LB clock') end
local key = KEYS[4]
if slot == 2 then key = KEYS[5] end
local base = string.sub(key, 1, -2) -- "<p>:{b}:g:<i>/"
local out = {slot}
for _, r in ipairs(redis.call('SMEMBERS', key)) do
  local n = redis.call('ZCARD', base .. r)
  if n > 0 then
    out[#out + 1] = r
    out[#out + 1] = n
  end
end
return out
