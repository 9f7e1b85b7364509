-- apply_meta.lua: apply.lua's block for the meta of the event that set a
-- member's score (R26, §11), on when an event of the call carries meta or
-- the board ever stored some (cfg field me, set here with the first; the
-- core's local meta says whether either holds): an event that sets the
-- score writes its meta, or drops the one stored when it carries none; a
-- best board's event that did not improve the score leaves the one that
-- did. A board whose events never carry meta runs none of it.
--
-- Keys built from P (KEYS[1]'s prefix): P .. 'meta:' .. <period index>,
-- the hash member id -> meta (a JSON object).
if meta then
  if not cf[7] then call('HSET', KEYS[1], 'me', '1') end
  -- Whether a slot's meta hash exists is asked once per call.
  local has = {}
  hook('write', function(ev)
    if mode == 'best' and ev.had and ev.new == ev.old then return end
    local sl, mt = ev.sl, ev.meta
    local key = P .. 'meta:' .. sl.idx
    if has[sl] == nil then has[sl] = call('EXISTS', key) == 1 end
    if mt ~= '' then
      call('HSET', key, ev.member, mt)
      if not has[sl] then
        has[sl] = true
        if sl.exp > now then call('PEXPIRE', key, sl.exp - now) end
      end
    elseif has[sl] then
      call('HDEL', key, ev.member)
    end
  end)
end
