/**
 * The `data:` payloads of a Server-Sent Events stream, parsed as JSON, in order as they arrive; ends when the stream
 * does (an abort ends it too). Events without data (keep-alives, `complete`) are passed over.
 */
export async function* sseData(body: ReadableStream<Uint8Array>): AsyncGenerator<any> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    let boundary: number;
    while ((boundary = buffer.indexOf('\n\n')) >= 0) {
      const data = buffer.slice(0, boundary).split('\n').find((line) => line.startsWith('data:'));
      buffer = buffer.slice(boundary + 2);
      if (data && data.length > 6) yield JSON.parse(data.slice(5));
    }
  }
}
