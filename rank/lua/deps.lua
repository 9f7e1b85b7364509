-- deps.lua: add or remove one dependant (a derived board) in a source
-- board's list, and give the source a new config version, so every apply
-- resolved with the old list is refused as stale and resent with the new
-- one (docs/protocol.md §8; the list is what apply.lua maintains).
--
-- KEYS[1] <p>:{g}..:cfg  hash of the source: v = config version, d = its
--         dependants, "<id>:<weight>:<span>:<retain>" joined by ','
-- KEYS[2] unused (the prelude's helpers name it; never touched)
-- KEYS[3] unused (the same)
--
-- ARGV[1] config version the caller read the source with ("" = any)
-- ARGV[2] unused ("")
-- ARGV[3] unused (0)
-- ARGV[4] unused (0)
-- ARGV[5] unused (0)
-- ARGV[6] op: add | remove
-- ARGV[7] the dependant's id
-- ARGV[8] its entry (add)
-- ARGV[9] the source's new config version
--
-- Returns the new list. Errors "LB <code>": unknown_board, bad_request.

local ver = redis.call('HGET', KEYS[1], 'v')
if not ver then return redis.error_reply('LB unknown_board') end
local op, id = ARGV[6], ARGV[7]
if (op ~= 'add' and op ~= 'remove') or id == '' then return redis.error_reply('LB bad_request') end
local list = redis.call('HGET', KEYS[1], 'd') or ''
local out = {}
for e in string.gmatch(list, '[^,]+') do
  if string.match(e, '^([^:]+)') ~= id then out[#out + 1] = e end
end
if op == 'add' then out[#out + 1] = ARGV[8] end
local d = table.concat(out, ',')
redis.call('HSET', KEYS[1], 'd', d, 'v', ARGV[9])
return d
