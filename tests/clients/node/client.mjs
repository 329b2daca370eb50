// A scenario run by tests/clients/test_client_node.py: the kubeconfig named by $KUBECONFIG, loaded as
// @kubernetes/client-node loads it, then a write and reads through its typed API. Prints one JSON line
// with what it saw; an error is printed (message only) and exits 1.
import * as k8s from '@kubernetes/client-node';

const kc = new k8s.KubeConfig();
try {
  kc.loadFromDefault();
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const name = process.argv[2];
  await core.createNamespacedConfigMap({namespace: 'default', body: {metadata: {name}, data: {from: 'client-node'}}});
  const cm = await core.readNamespacedConfigMap({namespace: 'default', name});
  const namespaces = await core.listNamespace();
  console.log(JSON.stringify({data: cm.data, namespaces: namespaces.items.map((ns) => ns.metadata.name)}));
} catch (err) {
  console.log(JSON.stringify({error: String(err && err.message || err)}));
  process.exit(1);
}
