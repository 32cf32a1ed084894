"""What goes over the wire to Redis: one connection per transaction (its commands pipelined in
one round trip, after a WATCH of the keys read) and the commit script that MULTI/EXEC runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .handle import StoreHandle


# ARGV[1] = TTL in ms (0: none); then 4 per change: op, table, key, value. KEYS: 3 per change (the
# entry's key, the table's key list, the counts), then the TTL marker and the index marker.
# Upper-case op: with TTL (the entry and its table's key list, so an idle index leaves nothing).
# O: a key Redis expired leaves the table's key list.
_COMMIT = """
local ttl = tonumber(ARGV[1])
local k = 1
for a = 2, #ARGV, 4 do
  local op, tbl, member, val = ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3]
  local key, order, counts = KEYS[k], KEYS[k + 1], KEYS[k + 2]
  k = k + 3
  local up = string.upper(op)
  if up == 'S' then
    if redis.call('exists', key) == 0 then
      redis.call('hincrby', counts, tbl, 1)
      redis.call('zadd', order, 0, member)
    end
    if op == 'S' and ttl > 0 then
      redis.call('set', key, val, 'px', ttl)
      redis.call('pexpire', order, ttl)
    else
      redis.call('set', key, val)
    end
  elseif up == 'D' then
    if redis.call('del', key) == 1 then redis.call('hincrby', counts, tbl, -1) end
    redis.call('zrem', order, member)
  elseif up == 'A' then
    if redis.call('zadd', key, 0, val) == 1 then redis.call('hincrby', counts, tbl, 1) end
    redis.call('zadd', order, 0, member)
    if op == 'A' and ttl > 0 then
      redis.call('pexpire', key, ttl)
      redis.call('pexpire', order, ttl)
    end
  elseif up == 'R' then
    if redis.call('zrem', key, val) == 1 then redis.call('hincrby', counts, tbl, -1) end
    if redis.call('exists', key) == 0 then redis.call('zrem', order, member) end
  elseif up == 'O' then
    redis.call('zrem', order, member)
  elseif up == 'C' then
    local n = redis.call('zcard', key)
    if n > 0 then
      redis.call('del', key)
      redis.call('hincrby', counts, tbl, -n)
    end
    redis.call('zrem', order, member)
  end
end
if ttl > 0 then redis.call('set', KEYS[#KEYS - 1], ARGV[1]) end
redis.call('set', KEYS[#KEYS], '1')
return 1
"""


class _Conn:
    """One connection to the node that holds the index's slot, for one transaction."""

    def __init__(self, store: "StoreHandle"):
        self.store, self.pool = store, store.pool()
        self.c = self.pool.get_connection()
        self.watching = False

    def run(self, cmds: list[tuple], watch: list[bytes] | tuple = ()) -> list[Any]:
        """Send the commands (after a WATCH of `watch`) in one round trip; their replies."""
        if watch:
            cmds = [("WATCH", *watch), *cmds]
            self.watching = True
        self.store.trips += 1
        self.store.commands += len(cmds)
        try:
            self.c.send_packed_command(self.c.pack_commands(cmds))
            replies = []
            for _ in cmds:
                try:
                    replies.append(self.c.read_response())
                except self.store.redis.ResponseError as exc:
                    replies.append(exc)
        except BaseException:
            self.c.disconnect()  # half a reply may be left on it
            raise
        for reply in replies:
            if isinstance(reply, Exception):
                raise reply
        return replies[1:] if watch else replies

    def close(self) -> None:
        try:
            if self.watching:
                self.run([("UNWATCH",)])
        except Exception:
            pass  # (disconnected: the server dropped the watches with the connection)
        finally:
            self.pool.release(self.c)
