// The dashboard's pages. The server answers each of these paths with index.html (SPA fallback),
// so a reload or a shared link lands on the same page.
import { createRouter, createWebHistory } from 'vue-router';
import { loadConfig, session } from './auth.js';
import OverviewPage from './pages/OverviewPage.vue';
import PoolsPage from './pages/PoolsPage.vue';
import PoolPage from './pages/PoolPage.vue';
import QueuesPage from './pages/QueuesPage.vue';
import QueuePage from './pages/QueuePage.vue';
import WorkflowsPage from './pages/WorkflowsPage.vue';
import WorkflowPage from './pages/WorkflowPage.vue';
import NodesPage from './pages/NodesPage.vue';
import MachinePoolsPage from './pages/MachinePoolsPage.vue';
import ConfigsPage from './pages/ConfigsPage.vue';
import LoginPage from './pages/LoginPage.vue';
import CallbackPage from './pages/CallbackPage.vue';

export const pages = [
  { path: '/', name: 'overview', component: OverviewPage, meta: { title: 'Overview' } },
  { path: '/pools', name: 'pools', component: PoolsPage, meta: { title: 'Pools' } },
  { path: '/pools/:name', name: 'pool', component: PoolPage, meta: { title: 'Pool' } },
  { path: '/queues', name: 'queues', component: QueuesPage, meta: { title: 'Queues' } },
  { path: '/queues/:name', name: 'queue', component: QueuePage, meta: { title: 'Queue' } },
  { path: '/workflows', name: 'workflows', component: WorkflowsPage, meta: { title: 'Workflows' } },
  { path: '/workflows/:id', name: 'workflow', component: WorkflowPage, meta: { title: 'Workflow' } },
  { path: '/nodes', name: 'nodes', component: NodesPage, meta: { title: 'Nodes' } },
  {
    path: '/machine-pools',
    name: 'machine-pools',
    component: MachinePoolsPage,
    meta: { title: 'Machine pools' },
  },
  { path: '/configs', name: 'configs', component: ConfigsPage, meta: { title: 'Configs' } },
  { path: '/login', name: 'login', component: LoginPage, meta: { title: 'Log in', public: true } },
  { path: '/callback', name: 'callback', component: CallbackPage, meta: { public: true } },
];

export const router = createRouter({ history: createWebHistory(), routes: pages });

router.beforeEach(async (to) => {
  await loadConfig();
  if (to.meta.public) return true;
  if (!session.token) return { name: 'login', query: { next: to.fullPath } };
  return true;
});

router.afterEach((to) => {
  const title = to.meta.title;
  document.title = title ? `${title} · gpupool` : 'gpupool';
});
