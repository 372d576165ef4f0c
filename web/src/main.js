import { createApp } from 'vue';
import App from './App.vue';
import { router } from './router.js';
import { takeTokenFromFragment } from './auth.js';
import './style.css';

// A `#token=...` fragment (the URL `make run` prints) is read once, kept in sessionStorage and
// removed from the address bar before anything else runs; fragments never reach the server's logs.
takeTokenFromFragment();
createApp(App).use(router).mount('#app');
