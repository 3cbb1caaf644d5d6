// Node as a subscriber: the channels it keeps subscribed across reconnects, and the push
// messages it hands to its MessageSink. Loop thread only.
#include "node.hpp"

#include <hiredis/hiredis.h>

#include "node_conn.hpp"
#include "protocol.hpp"

namespace redlock::detail {

using node_impl::ms_text;
using node_impl::notify_node;
using node_impl::since;

void Node::subscribe(const std::string& channel) {
  if (!channels_.insert(channel).second) return;
  if (current_ != nullptr && current_->in_session)
    issue_subscription(*current_, "SUBSCRIBE", channel);
}

void Node::unsubscribe(const std::string& channel) {
  if (channels_.erase(channel) == 0) return;
  if (current_ != nullptr && current_->in_session)
    issue_subscription(*current_, "UNSUBSCRIBE", channel);
}

void Node::issue_subscription(Conn& conn, const char* verb, const std::string& channel) {
  Argv argv;
  argv.push(verb);
  argv.push(channel);
  // Nothing to track: the server confirms each channel with a push message.
  if (append_command(conn.transport->output(), argv)) conn.transport->flush_soon();
}

void Node::handle_push(const redisReply* r) {
  if (r->type != REDIS_REPLY_ARRAY || r->elements < 2 ||
      r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_STRING)
    return;  // an error (e.g. NOPERM for a channel) or something else: nothing to hand on
  std::string_view kind(r->element[0]->str, r->element[0]->len);
  std::string_view channel(r->element[1]->str, r->element[1]->len);
  if (kind == "message")
    subscriber_->on_message(index_, channel,
                            r->elements >= 3 && r->element[2]->type == REDIS_REPLY_STRING
                                ? std::string_view(r->element[2]->str, r->element[2]->len)
                                : std::string_view());
  else if (kind == "subscribe")
    subscriber_->on_subscribed(index_, channel);
}
}  // namespace redlock::detail
