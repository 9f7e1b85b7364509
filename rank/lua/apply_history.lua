-- apply_history.lua: apply.lua's block for a member's last applied events
-- (§11), on when the apply config has the token "history=<n>" (n > 0):
-- each applied event is pushed onto the member's list of its period,
-- {"id","delta"|"value","score","at","meta"}, the list kept to its n
-- newest.
--
-- Keys built from P (KEYS[1]'s prefix): P .. 'h:' .. <period index> ..
-- ':' .. <member id>, the member's list in that period, newest first.
if opt.history and tonumber(opt.history) > 0 then
  local hist = tonumber(opt.history)
  hook('write', function(ev)
    -- Request ids need no escaping ([A-Za-z0-9_.:-]) and meta is a JSON
    -- object.
    local sl = ev.sl
    local h = P .. 'h:' .. sl.idx .. ':' .. ev.member
    local item = '{"id":"' .. ev.id .. (ev.op == '1' and '","delta":' or '","value":') .. fmt('%d', ev.amount)
      .. ',"score":' .. ev.ns .. ',"at":' .. fmt('%d', ev.t)
    if ev.meta ~= '' then item = item .. ',"meta":' .. ev.meta end
    local len = call('LPUSH', h, item .. '}')
    if len > hist then call('LTRIM', h, 0, hist - 1) end
    if len == 1 and sl.exp > now then call('PEXPIRE', h, sl.exp - now) end
  end)
end
