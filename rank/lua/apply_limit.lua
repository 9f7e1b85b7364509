-- apply_limit.lua: apply.lua's block for max_submissions (R18), on when the
-- apply config has the token "limit=<n>" (n > 0): a member's applied
-- events per period are counted in that period's hash; an event past n is
-- refused (limit_reached). A duplicate is answered before the count is
-- read and never counts.
--
-- Keys built from P (KEYS[1]'s prefix): P .. 'c:' .. <period index>, the
-- hash member id -> events applied in that period.
if opt.limit and tonumber(opt.limit) > 0 then
  local max = tonumber(opt.limit)
  hook('admit', function(ev)
    if tonumber(call('HGET', P .. 'c:' .. ev.sl.idx, ev.member) or '0') >= max then
      return 'limit_reached'
    end
  end)
  hook('write', function(ev)
    local sl = ev.sl
    local c = P .. 'c:' .. sl.idx
    if call('HINCRBY', c, ev.member, 1) == 1 and sl.exp > now then
      call('PEXPIRE', c, sl.exp - now)
    end
  end)
end
