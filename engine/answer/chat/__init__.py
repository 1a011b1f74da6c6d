"""A `RecommendResponse` as a chat message: a Slack Block Kit message (`slack`) or Markdown
(`markdown`), pure functions over the response that `POST /recommend?format=` serves. Every figure
comes from the response; `wording` holds the phrases both formats share."""
