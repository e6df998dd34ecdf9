// Debezium 3.1's PostgreSQL plugin ships DecodeLogicalDecodingMessageContent (the transform that
// turns the webhook trigger's logical decoding messages into the outbox row's shape) but leaves it
// out of its ServiceLoader manifest, which lists only TimescaleDb. Connect here discovers plugins
// by their manifests alone (plugin.discovery=service_load: no classpath scan at start), so it
// would answer "class could not be found". A jar holding only our manifest
// (connectors/plugin-services), put beside Debezium's in its plugin directory, is read by the same
// plugin class loader and names the class. Images that scan (docker-compose's) find it either way.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from '../config.js';
import { which } from './processes.js';

const source = path.join(repoRoot, 'connectors', 'plugin-services');
const manifest = path.join(source, 'META-INF', 'services', 'org.apache.kafka.connect.transforms.Transformation');

/** Part of the jars' stamp: a change to the manifest fetches and builds the plugins again. */
export const pluginServicesStamp = (): string => readFileSync(manifest, 'utf8');

/** Writes the manifest jar into Debezium's plugin directory under `plugins`. */
export function addPluginServices(plugins: string): void {
  const jar = which('jar');
  if (!jar) throw new Error('`jar` (from the JDK) was not found: the local Kafka Connect needs a JDK 17, apt-get install openjdk-17-jdk-headless');
  execFileSync(jar, ['cf', path.join(plugins, 'debezium-connector-postgres', 'integrations-plugin-services.jar'), '-C', source, 'META-INF'], { stdio: 'inherit' });
}
