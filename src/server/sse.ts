// Server-Sent Events: Yoga streams subscriptions (and any operation a client asks for as `text/event-stream`) in the
// GraphQL over SSE "distinct connections" mode; what the server answers before Yoga is reached takes the same form.

const accepts = (accept: string | undefined, type: string) => accept?.includes(type) === true;

/** Whether a client asked for an event stream and for no JSON answer: Yoga would answer it as SSE. */
export function wantsEventStream(accept: string | undefined): boolean {
  return accepts(accept, 'text/event-stream') && !accepts(accept, 'application/json') && !accepts(accept, 'application/graphql-response+json');
}

/** A GraphQL result in the form the client accepts, as Yoga would send it: one SSE event then `complete`, or JSON. */
export function graphqlAnswer(accept: string | undefined, result: object): { type: string; text: string } {
  const json = JSON.stringify(result);
  if (wantsEventStream(accept)) return { type: 'text/event-stream', text: `event: next\ndata: ${json}\n\nevent: complete\ndata:\n\n` };
  return { type: accepts(accept, 'application/graphql-response+json') ? 'application/graphql-response+json' : 'application/json', text: json };
}
