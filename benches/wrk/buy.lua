-- wrk script for `make bench-server`: each request buys a « Jouez » ticket as one of the players
-- whose session tokens are listed in a file, in turn, with an Idempotency-Key never used before.
-- Usage: wrk ... -s buy.lua <url> -- <tokens file> <key prefix>
local tokens, prefix = {}, "wrk"
local sent, thread_number = 0, 0

function setup(thread)
  thread:set("thread_number", thread_number)
  thread_number = thread_number + 1
end

function init(args)
  for line in io.lines(args[1]) do tokens[#tokens + 1] = line end
  prefix = args[2] .. "-" .. thread_number
end

function request()
  sent = sent + 1
  local headers = {
    ["Authorization"] = "Bearer " .. tokens[(sent % #tokens) + 1],
    ["Content-Type"] = "application/json",
    ["Idempotency-Key"] = prefix .. "-" .. sent,
  }
  return wrk.format("POST", "/api/tickets", headers, '{"mode":"jouez"}')
end
