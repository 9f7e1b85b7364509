-- putboard.lua: store a board's config unless the stored one is final
-- (docs/protocol.md §6: a final board's config no longer changes). The check and
-- the write are one step on the one clock, so a PUT in the millisecond the
-- board goes final, or racing another PUT that makes it final, cannot slip
-- through.
--
-- KEYS[1] <p>:{b}:cfg (or <p>:{g}/b:cfg)  hash: v = config version, j = config JSON,
--         a = apply config, sh, me (apply.lua's header)
-- KEYS[3] unused (the prelude names it; not passed)
--
-- ARGV[1] version of the config the caller read, "" when there was none
-- ARGV[2] now in unix ms, or "" to read the server's TIME (the one clock)
-- ARGV[3] final_at of the config the caller read, unix ms; "" = never final
-- ARGV[4] the new config's version
-- ARGV[5] the new config's JSON
-- ARGV[6] "1": the config is of a derived board still to be built over its
--         sources' data (field b, cleared by the build; rank/redisstore/derived.go),
--         "" or absent: nothing more
-- ARGV[7] a cohort board's cohort config (§12) as cohort reads take it from
--         field co, "<size>.<tiers>.<promote>.<demote>" (tiers 0 without a
--         league); "" or absent: none. Fixed at creation, so written as is.
-- ARGV[8] the config's apply config (apply.lua's header), field a. A
--         tiebreak shared in it sets field sh for good: the board's sorted
--         sets may hold raw "<member>" entries from then on (apply.lua).
-- ARGV[9] "old": only write the apply config (and sh) of the config stored
--         as version ARGV[1] by an earlier version, which lacks it (ARGV[3..7]
--         are ignored; KEYS[1] may be a shard's cfg hash, which holds only
--         v); fields sh and me (meta may have been written) are set
--         whatever the tiebreak, since its earlier configs are unknown.
--
-- Errors: "LB stale" when the stored version is not ARGV[1] (the caller
-- reads the config again and retries), "LB board_closed" when the stored
-- config is final at the clock. Returns 1 when the board was created, 0
-- when its config was replaced.

local cur = redis.call('HGET', KEYS[1], 'v')
if (cur or '') ~= ARGV[1] then return redis.error_reply('LB stale') end
if ARGV[9] == 'old' then
  redis.call('HSET', KEYS[1], 'a', ARGV[8], 'sh', '1', 'me', '1')
  return 0
end
if ARGV[3] ~= '' and clockMs() >= tonumber(ARGV[3]) then
  return redis.error_reply('LB board_closed')
end
redis.call('HSET', KEYS[1], 'v', ARGV[4], 'j', ARGV[5], 'a', ARGV[8])
if string.match(ARGV[8], '^%l+ %l+ shared ') then redis.call('HSET', KEYS[1], 'sh', '1') end
if ARGV[6] == '1' then redis.call('HSET', KEYS[1], 'b', '1') end
if ARGV[7] and ARGV[7] ~= '' then redis.call('HSET', KEYS[1], 'co', ARGV[7]) end
if cur then return 0 end
return 1
