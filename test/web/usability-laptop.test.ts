// The character sheet for people (test/web/usability.ts) at a laptop's size (1280×800).
import { usabilitySuite } from './usability.ts';

usabilitySuite({ width: 1280, height: 800 });
