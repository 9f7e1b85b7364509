-- cohorts.lua: how many members each tier of a cohort board's period has
-- had placed (apply.lua's counters), from which its cohorts are named.
--
-- KEYS[1] <p>:{b}:cfg        hash: v = config version
-- KEYS[2] <p>:{b}:seq        as top.lua's; not read here
-- KEYS[3] <p>:{b}:n          the prelude's names; not read here
-- KEYS[4] <p>:{b}:k:<A>/n    hash: tier index -> members placed, slot A
-- KEYS[5] <p>:{b}:k:<B>/n    the same for slot B
--
-- ARGV[1] config version the caller resolved the keys with
-- ARGV[2] now in unix ms, or "" to read the server's TIME
-- ARGV[3] start of slot A (unix ms)
-- ARGV[4] boundary: end of A = start of B; 0 = no choice, always A
-- ARGV[5] end of slot B
--
-- Returns {slot, tier1, placed1, tier2, placed2, ...}: slot 1 = A, 2 = B.
-- Errors "LB <code>": unknown_board, stale, clock.

local err = refused()
if err then return err end
local slot = slotNow()
if not slot then return redis.error_reply('LB clock') end
local key = KEYS[4]
if slot == 2 then key = KEYS[5] end
local out = {slot}
local h = redis.call('HGETALL', key)
for i = 1, #h do out[#out + 1] = h[i] end
return out
