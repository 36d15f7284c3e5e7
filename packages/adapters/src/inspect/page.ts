/**
 * The inspect page's static assets: the HTML shell, its script (which lays
 * the graph out and draws it as SVG) and its styles, read once from
 * `assets/` next to this module. Nothing is fetched from the network: the
 * page needs only this server.
 */
import { readFile } from 'node:fs/promises';

/** The page's files. */
export interface PageAssets {
  readonly html: string;
  readonly script: string;
  readonly style: string;
}

/** Read the page's files. */
export async function loadPageAssets(): Promise<PageAssets> {
  const read = (name: string) => readFile(new URL(`./assets/${name}`, import.meta.url), 'utf8');
  const [html, script, style] = await Promise.all([read('index.html'), read('inspect.js'), read('inspect.css')]);
  return { html, script, style };
}
