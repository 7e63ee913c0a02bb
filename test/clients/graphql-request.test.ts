// graphql-request with the repo's typed documents, as docs/api.md shows it (examples/clients/graphql-request.ts).
import { ClientError } from 'graphql-request';
import { describe, expect, it } from 'vitest';
import { observe, readySouls, soulsRequestClient } from '../../examples/clients/graphql-request.ts';
import { DashboardDocument } from '../../examples/gql/graphql.ts';
import { bearer, DROP_SHARDS, expectDashboard, INVALID_SHARDS_ERROR, invalidShards, newSoul, readyingShards, serverPerFile, TOKEN } from './support.ts';

const server = serverPerFile();

describe('graphql-request', () => {
  it('reads the dashboard in one request, as the server answers it', async () => {
    await expectDashboard(server(), await soulsRequestClient(server().url).request(DashboardDocument));
  });

  it('drops shards and names the souls they made ready', async () => {
    const client = soulsRequestClient(server().url);
    const id = await newSoul(server(), 'Tamsin');
    expect(await readySouls(client)).not.toContain('Tamsin');
    const { shardIds, nowReady } = await observe(client, readyingShards(server(), id));
    expect(shardIds).toHaveLength(3);
    expect(nowReady).toEqual(['Tamsin']);
    expect(await readySouls(client)).toContain('Tamsin');
  });

  it('reads a ValidationError whole through `... on Error`, and the example turns it into a message naming the field', async () => {
    const client = soulsRequestClient(server().url);
    expect(await client.request(DROP_SHARDS, { inputs: invalidShards('1') })).toEqual({ dropShards: INVALID_SHARDS_ERROR });
    await expect(observe(client, invalidShards('1'))).rejects.toThrow(`${INVALID_SHARDS_ERROR.field}: ${INVALID_SHARDS_ERROR.message}`);
  });
});

describe('graphql-request on a server with tokens', () => {
  const tokened = serverPerFile({ tokens: true });

  it('sends the token as a Bearer header', async () => {
    const client = soulsRequestClient(tokened().url, TOKEN);
    await expectDashboard(tokened(), await client.request(DashboardDocument), bearer(TOKEN));
    const id = await newSoul(tokened(), 'Hale', bearer(TOKEN));
    expect((await observe(client, readyingShards(tokened(), id))).nowReady).toEqual(['Hale']);
  });

  it('throws a ClientError holding the server’s 401 and UNAUTHENTICATED without one', async () => {
    const failure = await soulsRequestClient(tokened().url).request(DashboardDocument).then(
      () => null,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(ClientError);
    const { response } = failure as ClientError;
    expect(response.status).toBe(401);
    expect(response.errors?.map((error) => error.extensions?.code)).toEqual(['UNAUTHENTICATED']);
  });
});
