type PostMessageInput = {
  channel: string;
  text?: string;
  blocks?: ({
    type: "section";
    text?: {
      type: "mrkdwn" | "plain_text";
      text: string;
    };
  } | {
    type: "divider";
  })[];
  thread_ts?: string;
};
/** Post a message to a channel */
declare function post_message(args: PostMessageInput): Promise<unknown>;
